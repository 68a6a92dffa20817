//! The one place each enumeration the hosts share is written down: its cases, their
//! numeric codes and their kebab-case names.
//!
//! Every host takes these tables from here instead of spelling them again: the snapshot
//! format stores the codes, the component converts the WIT's enums through them (a WIT
//! enum's discriminant is its case's position, so the WIT lists the cases in code order),
//! the JS package reads the names from an export of its wasm module, and the wasmtime
//! host maps the WIT's values back through `from_code`. Adding a case means adding it here
//! and to `wit/breaker.wit`, in the same position.

/// Declares a fieldless enum whose discriminants are its codes (0, 1, 2, … in order), with
/// `ALL`, `code`, `from_code`, `name`, `from_name` and `Display` (the name).
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $( $(#[$case_meta:meta])* $case:ident = $code:literal => $name:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $ty {
            $( $(#[$case_meta])* $case = $code, )+
        }

        impl $ty {
            /// Every case, in code order: `ALL[i].code() == i`.
            pub const ALL: &'static [Self] = &[$(Self::$case),+];

            /// The case's code: its position in [`Self::ALL`], which is also the position
            /// of the case in the WIT enum of the same name.
            #[inline]
            pub const fn code(self) -> u8 {
                self as u8
            }

            /// The case with this code.
            #[inline]
            pub fn from_code(code: u8) -> Option<Self> {
                Self::ALL.get(usize::from(code)).copied()
            }

            /// The kebab-case name, as the WIT interface and the test vectors spell it.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$case => $name, )+
                }
            }

            /// The case with this kebab-case name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $( $name => Some(Self::$case), )+
                    _ => None,
                }
            }
        }

        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        // The codes must be the positions, or `from_code` would disagree with `code`.
        #[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
        const _: () = {
            let all = $ty::ALL;
            let mut i = 0;
            while i < all.len() {
                assert!(all[i] as usize == i, "table codes must count up from 0");
                i += 1;
            }
        };
    };
}

pub(crate) use table;
