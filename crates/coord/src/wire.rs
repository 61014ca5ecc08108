//! A compact binary form for serde values that cross between ranks.
//!
//! JSON costs 3–10× the bytes of the numbers it carries and a parse per
//! field; at thousands of ranks the gather to rank 0 is mostly JSON text.
//! This format keeps the serde types of the callers and writes them
//! without names: unsigned integers as LEB128 varints, signed ones
//! zig-zag encoded first, floats as 8 little-endian bytes, strings and
//! byte strings and sequences with a varint length, `Option` and enum
//! variants with a varint tag, structs and tuples as their fields in
//! order. It is not self-describing (both ends must be the same binary,
//! which ranks of one run are), so `deserialize_any` is refused.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde::ser::{self, Serialize};

/// A value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

impl ser::Error for WireError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        WireError(msg.to_string())
    }
}

impl de::Error for WireError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        WireError(msg.to_string())
    }
}

/// Encodes a value.
pub fn to_bytes<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>, WireError> {
    let mut s = Encoder { out: Vec::new() };
    v.serialize(&mut s)?;
    Ok(s.out)
}

/// Decodes a value; trailing bytes are an error.
pub fn from_bytes<T: DeserializeOwned>(b: &[u8]) -> Result<T, WireError> {
    let mut d = Decoder { b, at: 0 };
    let v = T::deserialize(&mut d)?;
    if d.at != b.len() {
        return Err(WireError(format!(
            "{} bytes left over after the value",
            b.len() - d.at
        )));
    }
    Ok(v)
}

/// Appends `x` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads a LEB128 varint at `*at`, advancing it.
pub fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, WireError> {
    let mut x = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *b
            .get(*at)
            .ok_or_else(|| WireError("message ends inside a number".into()))?;
        *at += 1;
        if shift == 63 && byte > 1 {
            return Err(WireError("number longer than 64 bits".into()));
        }
        x |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(x);
        }
        shift += 7;
        if shift > 63 {
            return Err(WireError("number longer than 64 bits".into()));
        }
    }
}

fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzigzag(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

struct Encoder {
    out: Vec<u8>,
}

impl Encoder {
    fn len(&mut self, n: Option<usize>) -> Result<(), WireError> {
        let n = n.ok_or_else(|| WireError("sequence of unknown length".into()))?;
        put_varint(&mut self.out, n as u64);
        Ok(())
    }
}

impl ser::Serializer for &mut Encoder {
    type Ok = ();
    type Error = WireError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Result<(), WireError> {
        self.out.push(v as u8);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), WireError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), WireError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), WireError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), WireError> {
        put_varint(&mut self.out, zigzag(v));
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), WireError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), WireError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), WireError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), WireError> {
        put_varint(&mut self.out, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), WireError> {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), WireError> {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), WireError> {
        self.serialize_u64(v as u64)
    }
    fn serialize_str(self, v: &str) -> Result<(), WireError> {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), WireError> {
        put_varint(&mut self.out, v.len() as u64);
        self.out.extend_from_slice(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), WireError> {
        self.out.push(0);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), WireError> {
        self.out.push(1);
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), WireError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), WireError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
    ) -> Result<(), WireError> {
        self.serialize_u64(i.into())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), WireError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), WireError> {
        put_varint(&mut self.out, i.into());
        v.serialize(self)
    }
    fn serialize_seq(self, n: Option<usize>) -> Result<Self, WireError> {
        self.len(n)?;
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        i: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, WireError> {
        put_varint(&mut self.out, i.into());
        Ok(self)
    }
    fn serialize_map(self, n: Option<usize>) -> Result<Self, WireError> {
        self.len(n)?;
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, WireError> {
        self.serialize_tuple_variant(name, i, variant, len)
    }
}

macro_rules! compound {
    ($tr:ident, $method:ident $(, $key:ident)?) => {
        impl<'a> ser::$tr for &'a mut Encoder {
            type Ok = ();
            type Error = WireError;
            fn $method<T: Serialize + ?Sized>(&mut self, $($key: &'static str,)? v: &T) -> Result<(), WireError> {
                $(let _ = $key;)?
                v.serialize(&mut **self)
            }
            fn end(self) -> Result<(), WireError> {
                Ok(())
            }
        }
    };
}
compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);
compound!(SerializeStruct, serialize_field, key);
compound!(SerializeStructVariant, serialize_field, key);

impl ser::SerializeMap for &mut Encoder {
    type Ok = ();
    type Error = WireError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), WireError> {
        k.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), WireError> {
        v.serialize(&mut **self)
    }
    fn end(self) -> Result<(), WireError> {
        Ok(())
    }
}

struct Decoder<'b> {
    b: &'b [u8],
    at: usize,
}

impl<'b> Decoder<'b> {
    fn varint(&mut self) -> Result<u64, WireError> {
        get_varint(self.b, &mut self.at)
    }
    fn take(&mut self, n: usize) -> Result<&'b [u8], WireError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| WireError("message ends inside a value".into()))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn len(&mut self) -> Result<usize, WireError> {
        let n = self.varint()?;
        // Every element takes at least one byte, except unit-like ones,
        // which ranks never send in bulk: a bound against forged lengths.
        if n > (self.b.len() - self.at) as u64 {
            return Err(WireError(format!("length {n} exceeds the message")));
        }
        Ok(n as usize)
    }
    fn signed(&mut self) -> Result<i64, WireError> {
        Ok(unzigzag(self.varint()?))
    }
    fn narrow<T: TryFrom<u64>>(&mut self) -> Result<T, WireError> {
        let v = self.varint()?;
        T::try_from(v).map_err(|_| WireError(format!("number {v} out of range")))
    }
    fn narrow_signed<T: TryFrom<i64>>(&mut self) -> Result<T, WireError> {
        let v = self.signed()?;
        T::try_from(v).map_err(|_| WireError(format!("number {v} out of range")))
    }
}

impl<'de, 'b> de::Deserializer<'de> for &mut Decoder<'b> {
    type Error = WireError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, WireError> {
        Err(WireError(
            "the binary wire form is not self-describing".into(),
        ))
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        match self.take(1)?[0] {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            b => Err(WireError(format!("bad boolean {b}"))),
        }
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_i8(self.narrow_signed()?)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_i16(self.narrow_signed()?)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_i32(self.narrow_signed()?)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_i64(self.signed()?)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_u8(self.narrow()?)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_u16(self.narrow()?)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_u32(self.narrow()?)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_u64(self.varint()?)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let b = self.take(4)?;
        v.visit_f32(f32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let b = self.take(8)?;
        v.visit_f64(f64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let c: u32 = self.narrow()?;
        v.visit_char(char::from_u32(c).ok_or_else(|| WireError(format!("bad char {c}")))?)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let n = self.len()?;
        let s = std::str::from_utf8(self.take(n)?).map_err(|e| WireError(e.to_string()))?;
        v.visit_str(s)
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        self.deserialize_str(v)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let n = self.len()?;
        v.visit_bytes(self.take(n)?)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        self.deserialize_bytes(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        match self.take(1)?[0] {
            0 => v.visit_none(),
            1 => v.visit_some(self),
            b => Err(WireError(format!("bad option tag {b}"))),
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, WireError> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, WireError> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let n = self.len()?;
        v.visit_seq(Fixed { d: self, left: n })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, n: usize, v: V) -> Result<V::Value, WireError> {
        v.visit_seq(Fixed { d: self, left: n })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        n: usize,
        v: V,
    ) -> Result<V::Value, WireError> {
        self.deserialize_tuple(n, v)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, WireError> {
        let n = self.len()?;
        v.visit_map(Fixed { d: self, left: n })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, WireError> {
        self.deserialize_tuple(fields.len(), v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, WireError> {
        v.visit_enum(self)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, _: V) -> Result<V::Value, WireError> {
        Err(WireError("the binary wire form carries no names".into()))
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, WireError> {
        Err(WireError("the binary wire form cannot skip values".into()))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

struct Fixed<'a, 'b> {
    d: &'a mut Decoder<'b>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Fixed<'_, '_> {
    type Error = WireError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, WireError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.d).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> de::MapAccess<'de> for Fixed<'_, '_> {
    type Error = WireError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, WireError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.d).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, WireError> {
        seed.deserialize(&mut *self.d)
    }
}

impl<'de, 'a, 'b> de::EnumAccess<'de> for &'a mut Decoder<'b> {
    type Error = WireError;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), WireError> {
        let i: u32 = self.narrow()?;
        let v = seed.deserialize(i.into_deserializer())?;
        Ok((v, self))
    }
}

impl<'de, 'a, 'b> de::VariantAccess<'de> for &'a mut Decoder<'b> {
    type Error = WireError;
    fn unit_variant(self) -> Result<(), WireError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, WireError> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, n: usize, v: V) -> Result<V::Value, WireError> {
        de::Deserializer::deserialize_tuple(self, n, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, WireError> {
        de::Deserializer::deserialize_tuple(self, fields.len(), v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::path::PathBuf;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Kind {
        A,
        B(u32),
        C { x: i64, y: String },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Rec {
        worker: u32,
        neg: i32,
        big: u64,
        rate: f64,
        path: PathBuf,
        opt: Option<(PathBuf, u64)>,
        none: Option<String>,
        buckets: Vec<(u32, u64)>,
        kinds: Vec<Kind>,
        flag: bool,
        #[serde(default)]
        defaulted: u64,
    }

    #[test]
    fn values_round_trip_and_are_smaller_than_json() {
        let r = Rec {
            worker: 7,
            neg: -3,
            big: u64::MAX,
            rate: 1.5e9,
            path: PathBuf::from("/t/ioscale.d/file.00000007"),
            opt: Some(("/x".into(), 42)),
            none: None,
            buckets: (0..200).map(|i| (i, i as u64 * 1000)).collect(),
            kinds: vec![
                Kind::A,
                Kind::B(9),
                Kind::C {
                    x: i64::MIN,
                    y: "é".into(),
                },
            ],
            flag: true,
            defaulted: 0,
        };
        let b = to_bytes(&r).unwrap();
        assert_eq!(from_bytes::<Rec>(&b).unwrap(), r);
        let json = serde_json::to_vec(&r).unwrap();
        assert!(b.len() * 2 < json.len(), "{} vs {}", b.len(), json.len());
    }

    #[test]
    fn truncated_and_padded_messages_are_refused() {
        let b = to_bytes(&vec![1u64 << 40, 5]).unwrap();
        for cut in 0..b.len() {
            assert!(from_bytes::<Vec<u64>>(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(from_bytes::<Vec<u64>>(&long).is_err());
        assert!(from_bytes::<u8>(&to_bytes(&300u32).unwrap()).is_err());
    }

    #[test]
    fn varints_cover_the_range() {
        for x in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, x);
            let mut at = 0;
            assert_eq!(get_varint(&v, &mut at).unwrap(), x);
            assert_eq!(at, v.len());
        }
        for x in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
    }
}
