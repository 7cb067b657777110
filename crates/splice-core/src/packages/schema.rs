//! The strict JSON Schema subset of packages: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `minLength`/`maxLength`, `minimum`/`maximum`,
//! `minItems`/`maxItems`, `description`, `default`, and nothing else. `compile` checks that a
//! schema is well formed (every problem, each with its path) and turns it into a [`Schema`];
//! [`Schema::validate`] checks a value against it, again reporting every problem.
//!
//! Decisions (docs/packages.md, Schemas): `type` is one type name, never an array; an
//! integer-valued number (`1.0`) is an `integer`, as in JSON Schema since draft 6; a keyword
//! that applies to one type (`minLength`, `properties`, `items`, `minimum`, …) needs that `type`
//! beside it, so it cannot silently do nothing; every `required` name is one of `properties`;
//! `additionalProperties` is a boolean or a schema; `items` is one schema (no tuples); `enum`
//! and `default` values must themselves fit the schema; string lengths count Unicode code points.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::{Issue, index_path, key_path};

/// Schemas nest at most this deep (a hostile manifest cannot exhaust the stack).
pub const MAX_DEPTH: usize = 32;

const KEYWORDS: [&str; 14] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "description",
    "default",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Object,
    Array,
    String,
    Number,
    Integer,
    Boolean,
    Null,
}

impl Type {
    const NAMES: [(&'static str, Type); 7] = [
        ("object", Type::Object),
        ("array", Type::Array),
        ("string", Type::String),
        ("number", Type::Number),
        ("integer", Type::Integer),
        ("boolean", Type::Boolean),
        ("null", Type::Null),
    ];

    fn parse(name: &str) -> Option<Type> {
        Type::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    pub fn name(self) -> &'static str {
        Type::NAMES
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    pub fn matches(self, value: &Value) -> bool {
        match self {
            Type::Object => value.is_object(),
            Type::Array => value.is_array(),
            Type::String => value.is_string(),
            Type::Number => value.is_number(),
            Type::Integer => value.as_number().is_some_and(is_integer),
            Type::Boolean => value.is_boolean(),
            Type::Null => value.is_null(),
        }
    }
}

/// What an object may hold beyond `properties`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Additional {
    #[default]
    Any,
    None,
    Matching(Box<Schema>),
}

/// A compiled schema. A schema without `type` accepts any JSON value (`enum` aside).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    pub kind: Option<Type>,
    pub properties: Vec<(String, Schema)>,
    pub required: Vec<String>,
    pub additional: Additional,
    pub items: Option<Box<Schema>>,
    pub allowed: Option<Vec<Value>>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub minimum: Option<Number>,
    pub maximum: Option<Number>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub description: Option<String>,
    pub default: Option<Value>,
}

/// Compile `value` (found at `path`) into a schema, or report every problem with its path.
#[cfg(test)]
pub fn compile(value: &Value, path: &str) -> Result<Schema, Vec<Issue>> {
    let mut issues = Vec::new();
    let schema = compile_at(value, path, 0, &mut issues);
    if issues.is_empty() {
        Ok(schema)
    } else {
        Err(issues)
    }
}

/// Compile as far as possible: the schema with every broken keyword left out, and the issues
/// (so that what the rest of a package says can still be checked against it).
pub fn compile_partial(value: &Value, path: &str) -> (Schema, Vec<Issue>) {
    let mut issues = Vec::new();
    let schema = compile_at(value, path, 0, &mut issues);
    (schema, issues)
}

fn compile_at(value: &Value, path: &str, depth: usize, issues: &mut Vec<Issue>) -> Schema {
    let mut schema = Schema::default();
    let Some(map) = value.as_object() else {
        issues.push(Issue::new(path, "a schema must be a JSON object"));
        return schema;
    };
    if depth > MAX_DEPTH {
        issues.push(Issue::new(
            path,
            format!("schemas nest at most {MAX_DEPTH} levels deep"),
        ));
        return schema;
    }
    for key in map.keys() {
        if !KEYWORDS.contains(&key.as_str()) {
            issues.push(Issue::new(
                key_path(path, key),
                format!(
                    "unknown schema keyword `{key}` (allowed: {})",
                    KEYWORDS.join(", ")
                ),
            ));
        }
    }
    let kind = map
        .get("type")
        .map(|kind| kind.as_str().and_then(Type::parse));
    if let Some(None) = kind {
        issues.push(Issue::new(
            key_path(path, "type"),
            "must be one of the strings object, array, string, number, integer, boolean, null",
        ));
    }
    schema.kind = kind.flatten();
    let needs = |keyword: &str, types: &[Type], issues: &mut Vec<Issue>| {
        let present = map.contains_key(keyword);
        // An unparsable `type` is reported already; do not pile on.
        let type_ok = match kind {
            Some(Some(k)) => types.contains(&k),
            Some(None) => true,
            None => false,
        };
        if present && !type_ok {
            let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
            issues.push(Issue::new(
                key_path(path, keyword),
                format!(
                    "`{keyword}` needs `type: {}` beside it",
                    names.join("` or `type: ")
                ),
            ));
        }
        present
    };
    if needs("properties", &[Type::Object], issues) {
        compile_properties(map, path, depth, issues, &mut schema);
    }
    if needs("required", &[Type::Object], issues) {
        compile_required(map, path, issues, &mut schema);
    }
    if needs("additionalProperties", &[Type::Object], issues) {
        let at = key_path(path, "additionalProperties");
        schema.additional = match &map["additionalProperties"] {
            Value::Bool(true) => Additional::Any,
            Value::Bool(false) => Additional::None,
            other => Additional::Matching(Box::new(compile_at(other, &at, depth + 1, issues))),
        };
    }
    if needs("items", &[Type::Array], issues) {
        let at = key_path(path, "items");
        schema.items = Some(Box::new(compile_at(&map["items"], &at, depth + 1, issues)));
    }
    for (low, high, types) in [
        ("minLength", "maxLength", &[Type::String][..]),
        ("minItems", "maxItems", &[Type::Array][..]),
    ] {
        let low_value = needs(low, types, issues)
            .then(|| count(map, path, low, issues))
            .flatten();
        let high_value = needs(high, types, issues)
            .then(|| count(map, path, high, issues))
            .flatten();
        if let (Some(l), Some(h)) = (low_value, high_value)
            && l > h
        {
            issues.push(Issue::new(
                key_path(path, low),
                format!("is greater than `{high}`"),
            ));
        }
        if low == "minLength" {
            (schema.min_length, schema.max_length) = (low_value, high_value);
        } else {
            (schema.min_items, schema.max_items) = (low_value, high_value);
        }
    }
    let bound = |keyword: &str, issues: &mut Vec<Issue>| {
        if !needs(keyword, &[Type::Number, Type::Integer], issues) {
            return None;
        }
        let number = map[keyword].as_number().cloned();
        if number.is_none() {
            issues.push(Issue::new(key_path(path, keyword), "must be a number"));
        }
        number
    };
    schema.minimum = bound("minimum", issues);
    schema.maximum = bound("maximum", issues);
    if let (Some(low), Some(high)) = (&schema.minimum, &schema.maximum)
        && compare(low, high) == Ordering::Greater
    {
        issues.push(Issue::new(
            key_path(path, "minimum"),
            "is greater than `maximum`",
        ));
    }
    if let Some(description) = map.get("description") {
        match description.as_str() {
            Some(text) => schema.description = Some(text.to_string()),
            None => issues.push(Issue::new(
                key_path(path, "description"),
                "must be a string",
            )),
        }
    }
    // `enum` and `default` must fit the rest of the schema: a value no input can match is a
    // mistake, not a constraint.
    if let Some(values) = map.get("enum") {
        let at = key_path(path, "enum");
        match values.as_array() {
            Some(values) if !values.is_empty() => {
                for (i, value) in values.iter().enumerate() {
                    if values[..i].iter().any(|earlier| json_eq(earlier, value)) {
                        issues.push(Issue::new(index_path(&at, i), "repeats an earlier value"));
                    }
                    schema.check(value, &index_path(&at, i), issues);
                }
                schema.allowed = Some(values.clone());
            }
            _ => issues.push(Issue::new(at, "must be a non-empty array")),
        }
    }
    if let Some(default) = map.get("default") {
        schema.check(default, &key_path(path, "default"), issues);
        schema.default = Some(default.clone());
    }
    schema
}

fn compile_properties(
    map: &Map<String, Value>,
    path: &str,
    depth: usize,
    issues: &mut Vec<Issue>,
    schema: &mut Schema,
) {
    let at = key_path(path, "properties");
    match map["properties"].as_object() {
        Some(properties) => {
            for (name, inner) in properties {
                let inner_path = key_path(&at, name);
                let compiled = compile_at(inner, &inner_path, depth + 1, issues);
                schema.properties.push((name.clone(), compiled));
            }
        }
        None => issues.push(Issue::new(at, "must be an object of schemas")),
    }
}

fn compile_required(
    map: &Map<String, Value>,
    path: &str,
    issues: &mut Vec<Issue>,
    schema: &mut Schema,
) {
    let at = key_path(path, "required");
    let Some(names) = map["required"].as_array() else {
        issues.push(Issue::new(at, "must be an array of property names"));
        return;
    };
    let defined = map.get("properties").and_then(Value::as_object);
    for (i, name) in names.iter().enumerate() {
        let Some(name) = name.as_str() else {
            issues.push(Issue::new(index_path(&at, i), "must be a string"));
            continue;
        };
        if schema.required.iter().any(|n| n == name) {
            issues.push(Issue::new(
                index_path(&at, i),
                format!("`{name}` is listed twice"),
            ));
        } else if !defined.is_some_and(|p| p.contains_key(name)) {
            issues.push(Issue::new(
                index_path(&at, i),
                format!("`{name}` is not one of `properties`"),
            ));
        }
        schema.required.push(name.to_string());
    }
}

/// A non-negative integer keyword (`minLength`, `maxItems`, …).
fn count(
    map: &Map<String, Value>,
    path: &str,
    keyword: &str,
    issues: &mut Vec<Issue>,
) -> Option<u64> {
    let value = map[keyword].as_number().and_then(|n| {
        n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
                .map(|f| f as u64)
        })
    });
    if value.is_none() {
        issues.push(Issue::new(
            key_path(path, keyword),
            "must be a non-negative integer",
        ));
    }
    value
}

impl Schema {
    /// Every way `value` (found at `path`, e.g. `input`) breaks this schema, each with its path
    /// (`input.text`, `output.items[3]`); empty when it fits.
    pub fn validate(&self, value: &Value, path: &str) -> Vec<Issue> {
        let mut issues = Vec::new();
        self.check(value, path, &mut issues);
        issues
    }

    fn check(&self, value: &Value, path: &str, issues: &mut Vec<Issue>) {
        if let Some(kind) = self.kind
            && !kind.matches(value)
        {
            issues.push(Issue::new(
                path,
                format!("expected {}, got {}", kind.name(), describe(value)),
            ));
            return;
        }
        if let Some(allowed) = &self.allowed
            && !allowed.iter().any(|a| json_eq(a, value))
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            issues.push(Issue::new(
                path,
                format!("must be one of {}", list.join(", ")),
            ));
        }
        match value {
            Value::String(text) => {
                let length = text.chars().count() as u64;
                within(
                    length,
                    self.min_length,
                    self.max_length,
                    "characters",
                    path,
                    issues,
                );
            }
            Value::Number(number) => {
                if let Some(minimum) = &self.minimum
                    && compare(number, minimum) == Ordering::Less
                {
                    issues.push(Issue::new(path, format!("must be at least {minimum}")));
                }
                if let Some(maximum) = &self.maximum
                    && compare(number, maximum) == Ordering::Greater
                {
                    issues.push(Issue::new(path, format!("must be at most {maximum}")));
                }
            }
            Value::Array(items) => {
                within(
                    items.len() as u64,
                    self.min_items,
                    self.max_items,
                    "items",
                    path,
                    issues,
                );
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        schema.check(item, &index_path(path, i), issues);
                    }
                }
            }
            Value::Object(map) => self.check_object(map, path, issues),
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn check_object(&self, map: &Map<String, Value>, path: &str, issues: &mut Vec<Issue>) {
        for name in &self.required {
            if !map.contains_key(name) {
                issues.push(Issue::new(key_path(path, name), "is required"));
            }
        }
        for (key, inner) in map {
            let at = key_path(path, key);
            match self.properties.iter().find(|(name, _)| name == key) {
                Some((_, schema)) => schema.check(inner, &at, issues),
                None => match &self.additional {
                    Additional::Any => {}
                    Additional::None => issues.push(Issue::new(
                        at,
                        "is not an allowed property (additionalProperties is false)",
                    )),
                    Additional::Matching(schema) => schema.check(inner, &at, issues),
                },
            }
        }
    }
}

fn within(
    size: u64,
    low: Option<u64>,
    high: Option<u64>,
    unit: &str,
    path: &str,
    issues: &mut Vec<Issue>,
) {
    if let Some(low) = low
        && size < low
    {
        issues.push(Issue::new(
            path,
            format!("has {size} {unit}, fewer than {low}"),
        ));
    }
    if let Some(high) = high
        && size > high
    {
        issues.push(Issue::new(
            path,
            format!("has {size} {unit}, more than {high}"),
        ));
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An integer-valued number, whatever its spelling (`1`, `1.0`, `1e3`).
fn is_integer(number: &Number) -> bool {
    number.is_i64()
        || number.is_u64()
        || number
            .as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Numbers compared by value: exactly for integers, as f64 otherwise.
fn compare(a: &Number, b: &Number) -> Ordering {
    let exact = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (exact(a), exact(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let (a, b) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            a.partial_cmp(&b).unwrap_or(Ordering::Equal)
        }
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => compare(a, b) == Ordering::Equal,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| json_eq(x, y)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Schema {
        compile(&value, "input").unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn compile_errors(value: Value) -> Vec<String> {
        match compile(&value, "s") {
            Ok(_) => Vec::new(),
            Err(issues) => issues.iter().map(ToString::to_string).collect(),
        }
    }

    fn errors(schema: &Schema, value: Value) -> Vec<String> {
        schema
            .validate(&value, "input")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn unknown_keywords_are_reported_with_their_path_at_any_depth() {
        let errors = compile_errors(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "pattern": "^a"}},
            "items2": 1,
            "additionalProperties": {"type": "array", "items": {"format": "uri"}}
        }));
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("s.items2: unknown schema keyword"));
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("s.properties.text.pattern: unknown"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("s.additionalProperties.items.format: unknown"))
        );
    }

    #[test]
    fn type_is_one_known_name() {
        assert_eq!(
            compile_errors(json!({"type": "string"})),
            Vec::<String>::new()
        );
        assert_eq!(compile_errors(json!({"type": ["string", "null"]})).len(), 1);
        assert_eq!(compile_errors(json!({"type": "float"})).len(), 1);
        assert_eq!(
            compile_errors(json!(true)),
            ["s: a schema must be a JSON object"]
        );
        let s = schema(json!({"type": "null"}));
        assert!(errors(&s, json!(null)).is_empty());
        assert_eq!(errors(&s, json!(0)), ["input: expected null, got integer"]);
        let s = schema(json!({"type": "boolean"}));
        assert!(errors(&s, json!(false)).is_empty());
        assert_eq!(
            errors(&s, json!("true")),
            ["input: expected boolean, got string"]
        );
    }

    #[test]
    fn no_type_accepts_any_value() {
        let s = schema(json!({"description": "anything"}));
        for value in [
            json!(null),
            json!(1),
            json!("x"),
            json!([1]),
            json!({"a": {}}),
        ] {
            assert!(errors(&s, value).is_empty());
        }
    }

    #[test]
    fn integer_means_integer_valued_and_number_takes_both() {
        let s = schema(json!({"type": "integer"}));
        assert!(errors(&s, json!(3)).is_empty());
        assert!(errors(&s, json!(-3)).is_empty());
        assert!(errors(&s, serde_json::from_str("1.0").expect("parse 1.0")).is_empty());
        assert!(errors(&s, json!(u64::MAX)).is_empty());
        assert_eq!(
            errors(&s, json!(1.5)),
            ["input: expected integer, got number"]
        );
        assert_eq!(
            errors(&s, json!("1")),
            ["input: expected integer, got string"]
        );
        let s = schema(json!({"type": "number"}));
        assert!(errors(&s, json!(1.5)).is_empty());
        assert!(errors(&s, json!(2)).is_empty());
        assert_eq!(
            errors(&s, json!(true)),
            ["input: expected number, got boolean"]
        );
    }

    #[test]
    fn properties_required_and_additional_properties() {
        let s = schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["text"],
            "additionalProperties": false
        }));
        assert!(errors(&s, json!({"text": "a"})).is_empty());
        assert_eq!(
            errors(&s, json!({"n": "x", "extra": 1, "a.b": 2})),
            [
                "input.text: is required",
                "input.n: expected integer, got string",
                "input.extra: is not an allowed property (additionalProperties is false)",
                "input[\"a.b\"]: is not an allowed property (additionalProperties is false)",
            ]
        );
        let open = schema(json!({"type": "object", "properties": {}}));
        assert!(errors(&open, json!({"x": 1})).is_empty());
        let typed = schema(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert!(errors(&typed, json!({"x": "y"})).is_empty());
        assert_eq!(
            errors(&typed, json!({"x": 1})),
            ["input.x: expected string, got integer"]
        );
        assert_eq!(
            compile_errors(json!({"type": "object", "properties": [], "required": ["a", 1]})),
            [
                "s.properties: must be an object of schemas",
                "s.required[0]: `a` is not one of `properties`",
                "s.required[1]: must be a string",
            ]
        );
        assert_eq!(
            compile_errors(
                json!({"type": "object", "properties": {"a": {}}, "required": ["a", "a"], "additionalProperties": 1})
            ),
            [
                "s.required[1]: `a` is listed twice",
                "s.additionalProperties: a schema must be a JSON object"
            ]
        );
    }

    #[test]
    fn items_and_item_counts() {
        let s = schema(
            json!({"type": "array", "items": {"type": "integer", "maximum": 9}, "minItems": 1, "maxItems": 3}),
        );
        assert!(errors(&s, json!([1, 2])).is_empty());
        assert_eq!(errors(&s, json!([])), ["input: has 0 items, fewer than 1"]);
        assert_eq!(
            errors(&s, json!([1, "a", 3, 10])),
            [
                "input: has 4 items, more than 3",
                "input[1]: expected integer, got string",
                "input[3]: must be at most 9",
            ]
        );
        assert_eq!(
            compile_errors(json!({"type": "array", "minItems": -1})),
            ["s.minItems: must be a non-negative integer"]
        );
        assert_eq!(
            compile_errors(json!({"type": "array", "minItems": 2, "maxItems": 1})),
            ["s.minItems: is greater than `maxItems`"]
        );
        assert_eq!(
            compile_errors(json!({"type": "array", "items": []})),
            ["s.items: a schema must be a JSON object"]
        );
    }

    #[test]
    fn string_lengths_count_code_points() {
        let s = schema(json!({"type": "string", "minLength": 2, "maxLength": 3}));
        assert!(errors(&s, json!("éé")).is_empty());
        assert_eq!(
            errors(&s, json!("a")),
            ["input: has 1 characters, fewer than 2"]
        );
        assert_eq!(
            errors(&s, json!("abcd")),
            ["input: has 4 characters, more than 3"]
        );
        assert_eq!(
            compile_errors(json!({"type": "string", "maxLength": 1.5})),
            ["s.maxLength: must be a non-negative integer"]
        );
        assert!(compile_errors(json!({"type": "string", "maxLength": 2.0})).is_empty());
    }

    #[test]
    fn minimum_and_maximum_are_inclusive_and_exact() {
        let s = schema(json!({"type": "number", "minimum": -1, "maximum": 2.5}));
        assert!(errors(&s, json!(-1)).is_empty());
        assert!(errors(&s, json!(2.5)).is_empty());
        assert_eq!(errors(&s, json!(-1.01)), ["input: must be at least -1"]);
        assert_eq!(errors(&s, json!(3)), ["input: must be at most 2.5"]);
        let big = schema(json!({"type": "integer", "maximum": 9007199254740993_u64}));
        assert_eq!(
            errors(&big, json!(9007199254740994_u64)),
            ["input: must be at most 9007199254740993"]
        );
        assert_eq!(
            compile_errors(json!({"type": "integer", "minimum": "0"})),
            ["s.minimum: must be a number"]
        );
        assert_eq!(
            compile_errors(json!({"type": "integer", "minimum": 2, "maximum": 1})),
            ["s.minimum: is greater than `maximum`"]
        );
    }

    #[test]
    fn keywords_need_their_type() {
        let errors = compile_errors(json!({
            "minLength": 1, "items": {}, "properties": {}, "minimum": 0, "maxItems": 1, "required": [], "additionalProperties": false
        }));
        assert_eq!(errors.len(), 7, "{errors:?}");
        assert!(
            errors[0].starts_with("s.properties: `properties` needs `type: object`"),
            "{errors:?}"
        );
        assert!(
            compile_errors(json!({"type": "string", "minimum": 1}))[0]
                .contains("`type: number` or `type: integer`")
        );
    }

    #[test]
    fn enum_values_fit_the_schema_and_are_compared_by_value() {
        let s = schema(json!({"type": "string", "enum": ["a", "b"]}));
        assert!(errors(&s, json!("a")).is_empty());
        assert_eq!(
            errors(&s, json!("c")),
            [r#"input: must be one of "a", "b""#]
        );
        let n = schema(json!({"enum": [1, "x", null]}));
        assert!(errors(&n, serde_json::from_str("1.0").expect("parse 1.0")).is_empty());
        assert!(errors(&n, json!(null)).is_empty());
        assert_eq!(errors(&n, json!(2)).len(), 1);
        assert_eq!(
            compile_errors(json!({"type": "string", "enum": ["a", 1, "a"]})),
            [
                "s.enum[1]: expected string, got integer",
                "s.enum[2]: repeats an earlier value"
            ]
        );
        assert_eq!(
            compile_errors(json!({"enum": []})),
            ["s.enum: must be a non-empty array"]
        );
    }

    #[test]
    fn description_and_default() {
        let s = schema(json!({"type": "integer", "description": "n", "default": 3, "maximum": 5}));
        assert_eq!(s.description.as_deref(), Some("n"));
        assert_eq!(s.default, Some(json!(3)));
        assert_eq!(
            compile_errors(json!({"description": 1})),
            ["s.description: must be a string"]
        );
        assert_eq!(
            compile_errors(json!({"type": "integer", "maximum": 5, "default": 6})),
            ["s.default: must be at most 5"]
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let mut value = json!({"type": "string"});
        for _ in 0..40 {
            value = json!({"type": "array", "items": value});
        }
        let errors = compile_errors(value);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].ends_with("schemas nest at most 32 levels deep"));
    }
}
