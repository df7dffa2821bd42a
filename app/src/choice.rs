//! The library's option enums on the command line: one clap value parser for every
//! [`Choice`], so that `--help` lists each value with its doc comment and a wrong value is
//! clap's usual error with the possible values.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use std::marker::PhantomData;
pub use warpkit::choice::Choice;

/// The value parser of `T` (`#[arg(long, value_parser = choice::<T>())]`).
pub fn choice<T: Choice>() -> ChoiceParser<T> {
    ChoiceParser(PhantomData)
}

#[derive(Clone, Copy)]
pub struct ChoiceParser<T>(PhantomData<T>);

impl<T: Choice> ChoiceParser<T> {
    fn values() -> impl Iterator<Item = PossibleValue> {
        T::ALL.iter().map(|v| {
            // Without its final period, as clap shows a one-paragraph doc comment.
            let help = v.help().strip_suffix('.').unwrap_or(v.help());
            let value = PossibleValue::new(v.name());
            if help.is_empty() {
                value
            } else {
                value.help(help)
            }
        })
    }
}

impl<T: Choice + Send + Sync> TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // clap's own parser for the error message (the value, the option, the possible values).
        let name = PossibleValuesParser::new(Self::values()).parse_ref(cmd, arg, value)?;
        Ok(T::from_name(&name).expect("a possible value names a variant"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(Self::values()))
    }
}
