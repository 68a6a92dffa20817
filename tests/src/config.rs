//! A vector's `config`: the fields it sets, read into the core's units.

use anyhow::{anyhow, Result};
use serde_json::{Map, Value};
use tripgate_core::{Config, Field, FieldKind, GrpcSet, StatusSet, MILLISECOND};

/// A whole number of milliseconds as ns; the error names `key`.
pub(crate) fn ms(value: &Value, key: &str) -> Result<u64> {
    let n = value
        .as_u64()
        .ok_or_else(|| anyhow!("{key} must be a whole number of ms"))?;
    n.checked_mul(MILLISECOND)
        .ok_or_else(|| anyhow!("{key} overflows"))
}

/// A value a vector gives a config field, in the core's units (durations in ns).
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// A count, a percentage, a duration or the seed.
    Number(u64),
    /// The backoff factor.
    Factor(f64),
    /// A list of HTTP statuses or gRPC codes, unvalidated (hosts must refuse bad ones).
    Codes(Vec<u64>),
}

/// A vector's `config`: the fields it sets, by the core's [`Field`] table. Fields it does
/// not name are absent, and each host must apply its own defaults to them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VectorConfig {
    /// The fields set, in the vector's order.
    pub fields: Vec<(Field, FieldValue)>,
}

impl VectorConfig {
    /// Reads a vector's `config` object: keys are the core's field names, durations with
    /// an `-ms` suffix in whole milliseconds.
    pub fn parse(json: &Map<String, Value>) -> Result<Self> {
        let mut fields = Vec::new();
        for (key, value) in json {
            let name = key.strip_suffix("-ms").unwrap_or(key);
            let field = Field::from_name(name)
                .filter(|f| (f.kind() == FieldKind::Duration) == (name != key))
                .ok_or_else(|| anyhow!("unknown config key {key:?}"))?;
            let int = || {
                value
                    .as_u64()
                    .ok_or_else(|| anyhow!("{key} must be a whole number"))
            };
            let value = match field.kind() {
                FieldKind::Duration => FieldValue::Number(ms(value, key)?),
                FieldKind::Count | FieldKind::Percent | FieldKind::Seed => {
                    FieldValue::Number(int()?)
                }
                FieldKind::Flag => FieldValue::Number(u64::from(
                    value
                        .as_bool()
                        .ok_or_else(|| anyhow!("{key} must be true or false"))?,
                )),
                FieldKind::Factor => FieldValue::Factor(
                    value
                        .as_f64()
                        .ok_or_else(|| anyhow!("{key} must be a number"))?,
                ),
                FieldKind::Statuses | FieldKind::GrpcCodes => FieldValue::Codes(
                    value
                        .as_array()
                        .ok_or_else(|| anyhow!("{key} must be an array"))?
                        .iter()
                        .map(|v| {
                            v.as_u64()
                                .ok_or_else(|| anyhow!("{key} holds a non-number"))
                        })
                        .collect::<Result<_>>()?,
                ),
            };
            fields.push((field, value));
        }
        Ok(Self { fields })
    }

    /// The value the vector gives `field`, if any.
    pub fn get(&self, field: Field) -> Option<&FieldValue> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v)
    }

    /// The core config: the defaults, with every field the vector sets. A code outside
    /// its range is an error naming the field (as the component and the JS package refuse
    /// it), not dropped from the set.
    pub fn to_core(&self) -> Result<Config, tripgate_core::ConfigError> {
        let mut config = Config::default();
        for (field, value) in &self.fields {
            let list_error = || tripgate_core::ConfigError {
                field: *field,
                rule: tripgate_core::Rule::List,
            };
            match value {
                FieldValue::Number(n) => config.set(*field, *n)?,
                FieldValue::Factor(f) => config.backoff_factor = *f,
                FieldValue::Codes(codes) if *field == Field::FaultStatuses => {
                    config.fault_statuses = codes.iter().try_fold(StatusSet::EMPTY, |set, &c| {
                        u16::try_from(c)
                            .ok()
                            .filter(|&c| tripgate_core::HttpStatus::new(c).is_ok())
                            .map(|c| set.with(c))
                            .ok_or_else(list_error)
                    })?
                }
                FieldValue::Codes(codes) => {
                    config.fault_grpc_codes = codes.iter().try_fold(GrpcSet::EMPTY, |set, &c| {
                        u8::try_from(c)
                            .ok()
                            .filter(|&c| tripgate_core::GrpcCode::new(c).is_ok())
                            .map(|c| set.with(c))
                            .ok_or_else(list_error)
                    })?
                }
            }
        }
        Ok(config)
    }
}
