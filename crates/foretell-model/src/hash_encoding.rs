//! The byte encoding fingerprints hash: a serde serializer written for speed rather than for
//! being read back.
//!
//! Fingerprints were first taken over postcard's encoding. Postcard is a wire format: it writes
//! integers as varints, one byte at a time through a generic output, which made the encoding
//! (not the hash) most of what hashing a local state cost in local model checking (a quarter of
//! an LMC run; docs/BENCHMARKS.md). A fingerprint needs less: the bytes must depend only on the
//! value (so that every process and machine agrees) and differ for different values of a type.
//! This encoding gives both with fixed-width little-endian scalars, written straight into a
//! reused buffer:
//!
//! - `bool`, `u8`, `i8`: one byte; wider integers, floats (their bits) and `char`: their width;
//! - strings and byte strings: their length as a `u64`, then the bytes;
//! - `None`: a 0 byte; `Some(v)`: a 1 byte, then `v`;
//! - enum variants: the variant's index as a `u32`, then its fields;
//! - sequences and maps: their length as a `u64` (patched in afterwards when serde does not know
//!   it beforehand), then the elements or the key-value pairs in iteration order;
//! - tuples, structs, newtypes: their fields in order, with nothing around them; units: nothing.
//!
//! For a fixed type every value is read off its bytes by following the type, so two values
//! with the same bytes are equal: the encoding is injective, as a hash input must be. It is
//! not a storage format; what is stored or sent (snapshots, monitor states, worlds between
//! cluster processes) stays in postcard.

use serde::ser::{self, Serialize};
use std::fmt;

/// Appends the fingerprint encoding of `value` to `bytes`.
///
/// # Errors
/// Only when `value`'s own `Serialize` implementation reports one (a derived one never does).
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T, bytes: &mut Vec<u8>) -> Result<(), EncodeError> {
    value.serialize(&mut Encoder { bytes })
}

/// A `Serialize` implementation failed.
#[derive(Debug)]
pub(crate) struct EncodeError(String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

impl ser::Error for EncodeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        EncodeError(message.to_string())
    }
}

/// The serializer: everything goes to the end of `bytes`.
struct Encoder<'b> {
    bytes: &'b mut Vec<u8>,
}

impl<'b> Encoder<'b> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    #[inline]
    fn put_len(&mut self, len: usize) {
        self.put(&(len as u64).to_le_bytes());
    }

    #[inline]
    fn put_variant(&mut self, index: u32) {
        self.put(&index.to_le_bytes());
    }

    /// Starts a sequence or map: its length now if known, else a placeholder that
    /// [`Collection::end`] fills in.
    #[inline]
    fn collection<'e>(&'e mut self, len: Option<usize>) -> Collection<'e, 'b> {
        match len {
            Some(len) => {
                self.put_len(len);
                Collection { encoder: self, count: None }
            }
            None => {
                let at = self.bytes.len();
                self.put_len(0);
                Collection { encoder: self, count: Some((at, 0)) }
            }
        }
    }
}

/// A sequence or map being encoded; `count` is where its placeholder length sits and how many
/// elements have come, when the length was not known at the start.
struct Collection<'e, 'b> {
    encoder: &'e mut Encoder<'b>,
    count: Option<(usize, u64)>,
}

impl Collection<'_, '_> {
    #[inline]
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        if let Some((_, count)) = &mut self.count {
            *count += 1;
        }
        value.serialize(&mut *self.encoder)
    }

    #[inline]
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        value.serialize(&mut *self.encoder)
    }

    #[inline]
    fn end(self) -> Result<(), EncodeError> {
        if let Some((at, count)) = self.count {
            self.encoder.bytes[at..at + 8].copy_from_slice(&count.to_le_bytes());
        }
        Ok(())
    }
}

/// The fields of a tuple, struct or variant: written one after another.
struct Fields<'e, 'b> {
    encoder: &'e mut Encoder<'b>,
}

/// Integer methods of the serializer: the value's little-endian bytes.
macro_rules! scalars {
    ($($method:ident($type:ty)),* $(,)?) => {$(
        #[inline]
        fn $method(self, v: $type) -> Result<(), EncodeError> {
            self.put(&v.to_le_bytes());
            Ok(())
        }
    )*};
}

impl<'e, 'b> ser::Serializer for &'e mut Encoder<'b> {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Collection<'e, 'b>;
    type SerializeTuple = Fields<'e, 'b>;
    type SerializeTupleStruct = Fields<'e, 'b>;
    type SerializeTupleVariant = Fields<'e, 'b>;
    type SerializeMap = Collection<'e, 'b>;
    type SerializeStruct = Fields<'e, 'b>;
    type SerializeStructVariant = Fields<'e, 'b>;

    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.put(&[u8::from(v)]);
        Ok(())
    }

    scalars! {
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_i64(i64),
        serialize_i128(i128), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32),
        serialize_u64(u64), serialize_u128(u128),
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<(), EncodeError> {
        self.put(&v.to_bits().to_le_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), EncodeError> {
        self.put(&v.to_bits().to_le_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_char(self, v: char) -> Result<(), EncodeError> {
        self.put(&u32::from(v).to_le_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), EncodeError> {
        self.serialize_bytes(v.as_bytes())
    }

    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Result<(), EncodeError> {
        self.put_len(v.len());
        self.put(v);
        Ok(())
    }

    #[inline]
    fn serialize_none(self) -> Result<(), EncodeError> {
        self.put(&[0]);
        Ok(())
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), EncodeError> {
        self.put(&[1]);
        value.serialize(self)
    }

    #[inline]
    fn serialize_unit(self) -> Result<(), EncodeError> {
        Ok(())
    }

    #[inline]
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), EncodeError> {
        Ok(())
    }

    #[inline]
    fn serialize_unit_variant(self, _: &'static str, index: u32, _: &'static str) -> Result<(), EncodeError> {
        self.put_variant(index);
        Ok(())
    }

    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }

    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.put_variant(index);
        value.serialize(self)
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Collection<'e, 'b>, EncodeError> {
        Ok(self.collection(len))
    }

    #[inline]
    fn serialize_tuple(self, _: usize) -> Result<Fields<'e, 'b>, EncodeError> {
        Ok(Fields { encoder: self })
    }

    #[inline]
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Fields<'e, 'b>, EncodeError> {
        Ok(Fields { encoder: self })
    }

    #[inline]
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Fields<'e, 'b>, EncodeError> {
        self.put_variant(index);
        Ok(Fields { encoder: self })
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Collection<'e, 'b>, EncodeError> {
        Ok(self.collection(len))
    }

    #[inline]
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields<'e, 'b>, EncodeError> {
        Ok(Fields { encoder: self })
    }

    #[inline]
    fn serialize_struct_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Fields<'e, 'b>, EncodeError> {
        self.put_variant(index);
        Ok(Fields { encoder: self })
    }
}

impl ser::SerializeSeq for Collection<'_, '_> {
    type Ok = ();
    type Error = EncodeError;

    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        self.element(value)
    }

    #[inline]
    fn end(self) -> Result<(), EncodeError> {
        Collection::end(self)
    }
}

impl ser::SerializeMap for Collection<'_, '_> {
    type Ok = ();
    type Error = EncodeError;

    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), EncodeError> {
        self.element(key)
    }

    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), EncodeError> {
        self.item(value)
    }

    #[inline]
    fn end(self) -> Result<(), EncodeError> {
        Collection::end(self)
    }
}

/// Implements serde's field-by-field traits for [`Fields`]: each field is written in turn.
macro_rules! fields {
    ($($trait:ident::$method:ident($($skip:ty),*);)*) => {$(
        impl ser::$trait for Fields<'_, '_> {
            type Ok = ();
            type Error = EncodeError;

            #[inline]
            fn $method<T: Serialize + ?Sized>(&mut self, $(_: $skip,)* value: &T) -> Result<(), EncodeError> {
                value.serialize(&mut *self.encoder)
            }

            #[inline]
            fn end(self) -> Result<(), EncodeError> {
                Ok(())
            }
        }
    )*};
}

fields! {
    SerializeTuple::serialize_element();
    SerializeTupleStruct::serialize_field();
    SerializeTupleVariant::serialize_field();
    SerializeStruct::serialize_field(&'static str);
    SerializeStructVariant::serialize_field(&'static str);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::{BTreeMap, BTreeSet};

    fn bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
        let mut bytes = Vec::new();
        encode(value, &mut bytes).expect("encodes");
        bytes
    }

    #[derive(Serialize)]
    enum Shape {
        Empty,
        Point(u8),
        Pair(u16, u16),
        Named { a: u32, b: bool },
    }

    #[test]
    fn scalars_are_fixed_width_little_endian() {
        assert_eq!(bytes(&true), [1]);
        assert_eq!(bytes(&0x1234u16), [0x34, 0x12]);
        assert_eq!(bytes(&-2i32), [0xfe, 0xff, 0xff, 0xff]);
        assert_eq!(bytes(&1u64), [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes(&1.0f32), 1.0f32.to_bits().to_le_bytes());
        assert_eq!(bytes(&'a'), [97, 0, 0, 0]);
        assert_eq!(bytes(&u128::MAX), [0xff; 16]);
    }

    #[test]
    fn options_variants_and_strings_carry_their_tags() {
        assert_eq!(bytes(&None::<u8>), [0]);
        assert_eq!(bytes(&Some(7u8)), [1, 7]);
        assert_eq!(bytes(&Shape::Empty), [0, 0, 0, 0]);
        assert_eq!(bytes(&Shape::Point(9)), [1, 0, 0, 0, 9]);
        assert_eq!(bytes(&Shape::Pair(1, 2)), [2, 0, 0, 0, 1, 0, 2, 0]);
        assert_eq!(bytes(&Shape::Named { a: 3, b: true }), [3, 0, 0, 0, 3, 0, 0, 0, 1]);
        assert_eq!(bytes("hi"), [2, 0, 0, 0, 0, 0, 0, 0, b'h', b'i']);
        assert_eq!(bytes(&((), (1u8, 2u8))), [1, 2]);
    }

    #[test]
    fn collections_carry_their_length_known_or_not() {
        let map: BTreeMap<u8, u8> = [(1, 10), (2, 20)].into();
        assert_eq!(bytes(&map), [2, 0, 0, 0, 0, 0, 0, 0, 1, 10, 2, 20]);
        assert_eq!(bytes(&vec![5u8, 6, 7]), [3, 0, 0, 0, 0, 0, 0, 0, 5, 6, 7]);

        /// A sequence whose length serde does not know beforehand.
        struct Unsized(Vec<u8>);
        impl Serialize for Unsized {
            fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ser::SerializeSeq;
                let mut seq = serializer.serialize_seq(None)?;
                for x in &self.0 {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
        }
        assert_eq!(bytes(&(9u8, Unsized(vec![5, 6, 7]))), bytes(&(9u8, vec![5u8, 6, 7])));
    }

    #[test]
    fn different_values_encode_differently() {
        // Values that a looser encoding would run together: the boundary between the parts of
        // a tuple, empty against absent, one collection against two.
        let strings = [bytes(&("ab", "c")), bytes(&("a", "bc")), bytes(&("", "abc"))];
        assert!(strings[0] != strings[1] && strings[1] != strings[2] && strings[0] != strings[2]);
        assert_ne!(bytes(&Some(Vec::<u8>::new())), bytes(&None::<Vec<u8>>));
        let one: Vec<BTreeSet<u8>> = vec![[1, 2].into()];
        let two: Vec<BTreeSet<u8>> = vec![[1].into(), [2].into()];
        assert_ne!(bytes(&one), bytes(&two));
    }

    #[test]
    fn a_failing_serialize_is_an_error() {
        struct Refuses;
        impl Serialize for Refuses {
            fn serialize<S: ser::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(ser::Error::custom("refused"))
            }
        }
        let error = encode(&(1u8, Refuses), &mut Vec::new()).expect_err("the error comes back");
        assert_eq!(error.to_string(), "refused");
    }
}
