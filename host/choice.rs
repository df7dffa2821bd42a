//! The options that are one of a few named values (a backend, a scene, a traversal, a snapshot
//! format …): one trait, so that the `warpkit` command line, the Python bindings and error
//! messages list and parse them by the same names, and the library needs no parser.

pub use warpkit_derive::Choice;

/// An enum of named options; `#[derive(Choice)]` implements it from the variants.
pub trait Choice: Copy + PartialEq + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// The name that selects it: the variant's identifier in kebab-case.
    fn name(self) -> &'static str;
    /// What it does: the variant's doc comment on one line.
    fn help(self) -> &'static str;
    /// The variant that `name` names.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
    /// Every name, comma-separated (for error messages).
    fn names() -> String {
        Self::ALL
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::Choice;

    /// One option.
    #[derive(Clone, Copy, Debug, PartialEq, Choice)]
    enum Example {
        /// The first: two lines
        /// of help.
        CubicSpline,
        WendlandC2,
        Group2,
    }

    #[test]
    fn names_are_kebab_case_and_help_is_the_doc_comment() {
        assert_eq!(
            Example::ALL.iter().map(|v| v.name()).collect::<Vec<_>>(),
            ["cubic-spline", "wendland-c2", "group2"]
        );
        assert_eq!(Example::CubicSpline.help(), "The first: two lines of help.");
        assert_eq!(Example::WendlandC2.help(), "");
        assert_eq!(Example::from_name("group2"), Some(Example::Group2));
        assert_eq!(Example::from_name("Group2"), None);
        assert_eq!(Example::names(), "cubic-spline, wendland-c2, group2");
    }
}
