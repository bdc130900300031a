/**
 * `logToolCall`: a drop-in for levelcode's own (`common/src/utils/compliance-logging.ts`), with
 * its signature and its return value, that records the tool call in the dispatcher's signed
 * compliance log (contract §9) through `serve`, instead of appending a line of its own. The
 * line is what levelcode writes (`traceId`, `timestamp`, `eventType`, `agentId`, `payload`,
 * `signature`, so its `verifyEventIntegrity` accepts it) plus the chain that
 * `levelcode-hooks compliance verify` checks.
 *
 * The request is written to a server before the function returns, so a host that exits right
 * after still gets its line. A line that could not be written is told to the person at the next
 * SessionStart (docs/levelcode.md). Once it is in use, a `PostToolUse` of any runner of the
 * process tells the dispatcher not to record the call again (process.ts): one line per call.
 */
import { findBinary } from "./binary.js";
import { newId, poolFor } from "./pool.js";
import { hostEnvironment, markCallerRecordsCompliance, noteForPerson } from "./process.js";

/** levelcode's event type, with the same members. */
export interface ComplianceEvent {
  traceId: string;
  spanId?: string;
  timestamp: number;
  eventType: "decision" | "tool-call" | "state-change" | "phase-transition" | "approval" | "rejection";
  agentId?: string;
  taskId?: string;
  payload: Record<string, unknown>;
  signature?: string;
  humanApprover?: string;
}

/**
 * levelcode's keyless `signature`: a 32-bit rolling hash (h * 31 + code unit) of
 * `traceId:timestamp:eventType:JSON(payload)`, in base 36. It detects accidents, not forgery;
 * the dispatcher's Ed25519 chain is what does.
 */
export function legacySignature(event: Pick<ComplianceEvent, "traceId" | "timestamp" | "eventType" | "payload">): string {
  const text = `${event.traceId}:${event.timestamp}:${event.eventType}:${JSON.stringify(event.payload)}`;
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return hash.toString(36);
}

/**
 * Records one executed tool call of a team run: `traceId` is the tool call's id, `agentId` the
 * agent that made it, `result` whether it failed. Returns the event as levelcode's did; never
 * throws.
 */
export function logToolCall(
  teamName: string,
  traceId: string,
  agentId: string,
  tool: string,
  args: Record<string, unknown>,
  result: "success" | "failure",
): ComplianceEvent {
  const event: ComplianceEvent = { traceId, timestamp: Date.now(), eventType: "tool-call", agentId, payload: { tool, args, result }, signature: "" };
  // From now on the dispatch of a PostToolUse writes no line of its own (process.ts).
  markCallerRecordsCompliance();
  try {
    event.signature = legacySignature(event);
    const { key, env } = hostEnvironment();
    const binary = findBinary({ env });
    const pool = poolFor(binary, key, env);
    const server = pool.pick();
    const id = newId();
    const line = JSON.stringify({ id, op: "compliance", team: teamName, trace_id: traceId, agent_id: agentId, tool, args, result, timestamp: event.timestamp });
    void pool.send(server, `${line}\n`, id).then((reply) => {
      if (reply.kind === "fault") noteForPerson(`compliance log: tool call ${traceId} of team ${teamName} was not recorded: ${reply.warning}`);
      else if (typeof reply.answer.error === "string") noteForPerson(`compliance log: tool call ${traceId} of team ${teamName} was not recorded: ${reply.answer.error}`);
    });
  } catch (error) {
    noteForPerson(`compliance log: tool call ${traceId} of team ${teamName} was not recorded: ${error instanceof Error ? error.message : String(error)}`);
  }
  return event;
}
