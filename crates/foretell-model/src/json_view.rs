//! The JSON that traces, reports and diffs show of a protocol's values, for any `Serialize`
//! type.
//!
//! `serde_json` refuses a map whose keys are not strings, numbers or booleans: a Paxos node that
//! counts its learners per vote, `BTreeMap<(Round, Value), BTreeSet<NodeId>>`, has no JSON form
//! there. A checker cannot refuse to show a user's state (nor panic on it), so [`json_view`]
//! builds the same value `serde_json::to_value` does, except that such a map becomes a list of
//! `[key, value]` pairs. Every other type gets serde_json's own form, so a value that serde_json
//! can write reads back unchanged.

use serde::ser::{self, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// `value` as JSON: serde_json's form, with maps whose keys have no JSON string form written as
/// lists of `[key, value]` pairs. A value whose `Serialize` implementation fails is shown as the
/// string `<unserializable: ERROR>`.
pub fn json_view<T: Serialize + ?Sized>(value: &T) -> Value {
    value.serialize(ViewSerializer).unwrap_or_else(|e| Value::String(format!("<unserializable: {e}>")))
}

/// Why a value could not be shown: its own `Serialize` implementation failed.
#[derive(Debug)]
struct ViewError(String);

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ViewError {}

impl ser::Error for ViewError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ViewError(msg.to_string())
    }
}

/// Builds a [`Value`] like `serde_json`'s value serializer.
struct ViewSerializer;

/// `{variant: content}`, serde_json's externally tagged form of an enum variant with data.
fn tagged(variant: &'static str, content: Value) -> Value {
    let mut map = Map::new();
    map.insert(variant.to_owned(), content);
    Value::Object(map)
}

fn integer<T: TryInto<i64> + TryInto<u64> + fmt::Display + Copy>(v: T) -> Result<Value, ViewError> {
    if let Ok(v) = TryInto::<u64>::try_into(v) {
        Ok(Value::from(v))
    } else if let Ok(v) = TryInto::<i64>::try_into(v) {
        Ok(Value::from(v))
    } else {
        Err(ViewError(format!("number {v} is out of range")))
    }
}

/// The primitives serde_json's `Value::from` takes as they are (non-finite floats become null).
macro_rules! from_primitive {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<Value, ViewError> {
            Ok(Value::from(v))
        }
    )*};
}

impl ser::Serializer for ViewSerializer {
    type Ok = Value;
    type Error = ViewError;
    type SerializeSeq = SeqView;
    type SerializeTuple = SeqView;
    type SerializeTupleStruct = SeqView;
    type SerializeTupleVariant = SeqView;
    type SerializeMap = MapView;
    type SerializeStruct = MapView;
    type SerializeStructVariant = MapView;

    from_primitive!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64
    );

    fn serialize_i128(self, v: i128) -> Result<Value, ViewError> {
        integer(v)
    }
    fn serialize_u128(self, v: u128) -> Result<Value, ViewError> {
        integer(v)
    }
    fn serialize_char(self, v: char) -> Result<Value, ViewError> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, ViewError> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, ViewError> {
        Ok(Value::Array(v.iter().map(|&b| Value::from(b)).collect()))
    }
    fn serialize_none(self) -> Result<Value, ViewError> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, ViewError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, ViewError> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, ViewError> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, ViewError> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, ViewError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, ViewError> {
        Ok(tagged(variant, value.serialize(self)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqView, ViewError> {
        Ok(SeqView { items: Vec::with_capacity(len.unwrap_or(0)), variant: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqView, ViewError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<SeqView, ViewError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqView, ViewError> {
        Ok(SeqView { items: Vec::with_capacity(len), variant: Some(variant) })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapView, ViewError> {
        Ok(MapView { entries: Vec::with_capacity(len.unwrap_or(0)), key: None, variant: None })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapView, ViewError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapView, ViewError> {
        Ok(MapView { entries: Vec::with_capacity(len), key: None, variant: Some(variant) })
    }
}

/// A sequence, tuple or tuple variant being built.
struct SeqView {
    items: Vec<Value>,
    variant: Option<&'static str>,
}

impl SeqView {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ViewError> {
        self.items.push(value.serialize(ViewSerializer)?);
        Ok(())
    }

    fn finish(self) -> Value {
        let list = Value::Array(self.items);
        match self.variant {
            Some(variant) => tagged(variant, list),
            None => list,
        }
    }
}

/// The four sequence-like traits of serde, which differ only in their names.
macro_rules! sequence_view {
    ($($trait:ident::$add:ident),*) => {$(
        impl ser::$trait for SeqView {
            type Ok = Value;
            type Error = ViewError;
            fn $add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ViewError> {
                self.push(value)
            }
            fn end(self) -> Result<Value, ViewError> {
                Ok(self.finish())
            }
        }
    )*};
}

sequence_view!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A map, struct or struct variant being built: its entries in order, keys as values until the
/// end decides whether they can be JSON object keys.
struct MapView {
    entries: Vec<(Value, Value)>,
    key: Option<Value>,
    variant: Option<&'static str>,
}

/// The object key serde_json writes for `key`, if it writes one: strings as they are, numbers
/// and booleans as their text.
fn object_key(key: &Value) -> Option<String> {
    match key {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl MapView {
    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), ViewError> {
        self.entries.push((Value::String(key.to_owned()), value.serialize(ViewSerializer)?));
        Ok(())
    }

    fn finish(self) -> Value {
        let keys: Option<Vec<String>> = self.entries.iter().map(|(key, _)| object_key(key)).collect();
        let map = match keys {
            Some(keys) => {
                Value::Object(keys.into_iter().zip(self.entries.into_iter().map(|(_, v)| v)).collect())
            }
            None => Value::Array(self.entries.into_iter().map(|(k, v)| Value::Array(vec![k, v])).collect()),
        };
        match self.variant {
            Some(variant) => tagged(variant, map),
            None => map,
        }
    }
}

impl ser::SerializeMap for MapView {
    type Ok = Value;
    type Error = ViewError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ViewError> {
        self.key = Some(key.serialize(ViewSerializer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ViewError> {
        let key = self.key.take().ok_or_else(|| ViewError("a map value came without its key".into()))?;
        self.entries.push((key, value.serialize(ViewSerializer)?));
        Ok(())
    }
    fn end(self) -> Result<Value, ViewError> {
        Ok(self.finish())
    }
}

/// The two struct-like traits of serde, which differ only in their names.
macro_rules! struct_view {
    ($($trait:ident),*) => {$(
        impl ser::$trait for MapView {
            type Ok = Value;
            type Error = ViewError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), ViewError> {
                self.field(key, value)
            }
            fn end(self) -> Result<Value, ViewError> {
                Ok(self.finish())
            }
        }
    )*};
}

struct_view!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::json_view;
    use serde::{Serialize, Serializer};
    use serde_json::json;
    use std::collections::{BTreeMap, BTreeSet, HashMap};

    #[derive(Serialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    struct Round {
        counter: u32,
        node: u8,
    }

    #[derive(Serialize)]
    struct Id(u32);

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    enum Msg {
        Ping,
        Wrap(Id),
        Pair(u8, i64),
        Vote { round: Round, value: Option<u8> },
    }

    #[derive(Serialize)]
    struct State {
        name: String,
        flags: Vec<bool>,
        by_id: BTreeMap<u32, char>,
        by_newtype: BTreeMap<u8, Msg>,
        by_unit_variant: HashMap<Side, f64>,
        tuple: (i8, u128, i128),
        unit: Unit,
        nothing: (),
        bytes: serde_bytes_like::Bytes,
        maybe: Option<Box<State>>,
    }

    #[derive(Serialize, PartialEq, Eq, Hash)]
    enum Side {
        Left,
    }

    /// `serialize_bytes`, which derived types never call, the way `serde_bytes` calls it.
    mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    fn state(maybe: Option<Box<State>>) -> State {
        State {
            name: "n\"0".into(),
            flags: vec![true, false],
            by_id: BTreeMap::from([(7, 'x'), (2, 'y')]),
            by_newtype: BTreeMap::from([
                (1, Msg::Ping),
                (2, Msg::Wrap(Id(9))),
                (3, Msg::Pair(4, -5)),
                (4, Msg::Vote { round: Round { counter: 1, node: 2 }, value: None }),
            ]),
            by_unit_variant: HashMap::from([(Side::Left, 0.5)]),
            tuple: (-1, u128::from(u64::MAX), -7),
            unit: Unit,
            nothing: (),
            bytes: serde_bytes_like::Bytes(vec![0, 255]),
            maybe,
        }
    }

    #[test]
    fn a_value_serde_json_writes_is_written_the_same() {
        let value = state(Some(Box::new(state(None))));
        assert_eq!(json_view(&value), serde_json::to_value(&value).unwrap());
        assert_eq!(json_view(&f64::NAN), serde_json::to_value(f64::NAN).unwrap());
        assert_eq!(json_view("text"), json!("text"));
    }

    #[test]
    fn a_map_keyed_by_a_compound_value_becomes_a_list_of_pairs() {
        let round = |counter, node| Round { counter, node };
        let learns: BTreeMap<(Round, u8), BTreeSet<u8>> =
            BTreeMap::from([((round(1, 0), 5), BTreeSet::from([0, 2])), ((round(2, 1), 6), BTreeSet::new())]);
        assert!(serde_json::to_value(&learns).is_err(), "serde_json has no form for it");
        assert_eq!(
            json_view(&learns),
            json!([
                [[{ "counter": 1, "node": 0 }, 5], [0, 2]],
                [[{ "counter": 2, "node": 1 }, 6], []],
            ])
        );
        // Inside a variant, and beside maps that keep the object form.
        let inside = Msg::Vote { round: round(3, 1), value: Some(1) };
        let nested = BTreeMap::from([((1u8, 0u8), BTreeMap::from([(2u8, inside)]))]);
        assert_eq!(
            json_view(&nested),
            json!([[[1, 0], { "2": { "Vote": { "round": { "counter": 3, "node": 1 }, "value": 1 } } }]])
        );
    }

    #[test]
    fn a_failing_serialize_implementation_is_shown_not_raised() {
        struct Refuses;
        impl Serialize for Refuses {
            fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no form for this"))
            }
        }
        assert_eq!(json_view(&vec![Refuses]), json!("<unserializable: no form for this>"));
        let too_large = format!("<unserializable: number {} is out of range>", u128::MAX);
        assert_eq!(json_view(&u128::MAX), json!(too_large));
    }
}
