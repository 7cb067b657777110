//! Headless mode (`splice exec`): the run's lifecycle, stream-json input validation and what stdout
//! carries.

mod input_validation;
mod lifecycle;
mod output;
