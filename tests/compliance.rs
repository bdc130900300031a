//! The compliance log, black-box.
