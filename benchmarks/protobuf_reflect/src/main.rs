//! serdes' native Protobuf loop against prost-reflect on the same message bodies (see Cargo.toml).
//! Usage: protobuf-reflect-bench DIR MESSAGE, where DIR holds `bodies.bin` (u32-LE-length-prefixed
//! message bodies), `set.bin` (a serialized FileDescriptorSet) and `program.txt` (serdes' program
//! of MESSAGE, a Python literal). Prints the median ns per record of each lane over 31 turns.
use std::sync::Arc;
use std::time::Instant;

use arrow_array::builder::{BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MessageDescriptor, Value};
use pyo3::prelude::*;

#[path = "../../../rust/src/stack.rs"]
#[allow(dead_code)]
mod stack;

#[path = "../../../rust/src/columnar/protobuf"]
#[allow(dead_code)]
mod protobuf {
    pub mod columns;
    pub mod decode;
    pub mod maps;
    pub mod program;
    pub mod wire;
}

/// serdes' loop: every body into the columns, then the Arrow arrays (as a decode call does).
fn serdes_loop(def: &Arc<protobuf::program::MessageDef>, bodies: &[&[u8]]) -> usize {
    let mut top = protobuf::columns::StructCols::new(def.clone(), false, bodies.len());
    let mut cx = protobuf::decode::Ctx { guard: stack::Guard::here(), items: 0, max_items: usize::MAX };
    for b in bodies {
        cx.items = 0;
        protobuf::decode::message(&mut top, b, &mut cx).expect("serdes' loop decodes every body");
    }
    let rows = top.rows;
    top.finish_children(true).expect("columns");
    rows
}

enum Builder {
    I64(Int64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    F32(Float32Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

/// prost-reflect: a DynamicMessage per body, then (`convert`) each field into an Arrow builder
/// chosen by its kind -- the scalar kinds of a flat message, enough for the benchmark's record.
fn prost_reflect(desc: &MessageDescriptor, bodies: &[&[u8]], convert: bool) -> usize {
    let fields: Vec<_> = desc.fields().collect();
    let n = bodies.len();
    let mut builders: Vec<Builder> = fields
        .iter()
        .map(|f| match f.kind() {
            Kind::Int64 => Builder::I64(Int64Builder::with_capacity(n)),
            Kind::Int32 => Builder::I32(Int32Builder::with_capacity(n)),
            Kind::Double => Builder::F64(Float64Builder::with_capacity(n)),
            Kind::Float => Builder::F32(Float32Builder::with_capacity(n)),
            Kind::Bool => Builder::Bool(BooleanBuilder::with_capacity(n)),
            Kind::String => Builder::Str(StringBuilder::new()),
            k => panic!("a field kind this comparison does not convert: {k:?}"),
        })
        .collect();
    for b in bodies {
        let m = DynamicMessage::decode(desc.clone(), *b).expect("prost-reflect decodes every body");
        if !convert {
            std::hint::black_box(&m);
            continue;
        }
        for (f, builder) in fields.iter().zip(builders.iter_mut()) {
            match (builder, m.get_field(f).as_ref()) {
                (Builder::I64(x), Value::I64(v)) => x.append_value(*v),
                (Builder::I32(x), Value::I32(v)) => x.append_value(*v),
                (Builder::F64(x), Value::F64(v)) => x.append_value(*v),
                (Builder::F32(x), Value::F32(v)) => x.append_value(*v),
                (Builder::Bool(x), Value::Bool(v)) => x.append_value(*v),
                (Builder::Str(x), Value::String(v)) => x.append_value(v),
                _ => panic!("a value of another kind than its field"),
            }
        }
    }
    if convert {
        let arrays: Vec<ArrayRef> = builders
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    Builder::I64(x) => Arc::new(x.finish()),
                    Builder::I32(x) => Arc::new(x.finish()),
                    Builder::F64(x) => Arc::new(x.finish()),
                    Builder::F32(x) => Arc::new(x.finish()),
                    Builder::Bool(x) => Arc::new(x.finish()),
                    Builder::Str(x) => Arc::new(x.finish()),
                }
            })
            .collect();
        RecordBatch::try_from_iter(fields.iter().map(|f| f.name().to_string()).zip(arrays)).expect("batch");
    }
    n
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, message) = (std::path::Path::new(&args[1]), &args[2]);
    let data = std::fs::read(dir.join("bodies.bin")).expect("bodies.bin");
    let mut bodies = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let n = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")) as usize;
        bodies.push(&data[at + 4..at + 4 + n]);
        at += 4 + n;
    }
    let text = std::fs::read_to_string(dir.join("program.txt")).expect("program.txt");
    let def = Python::attach(|py| {
        let obj = py.eval(&std::ffi::CString::new(text).expect("no NUL"), None, None).expect("a Python literal");
        protobuf::program::parse_message(&obj, 0).expect("a program")
    });
    let pool = DescriptorPool::decode(std::fs::read(dir.join("set.bin")).expect("set.bin").as_slice()).expect("set");
    let desc = pool.get_message_by_name(message).expect("the message");
    type Lane<'a> = (&'static str, Box<dyn Fn() -> usize + 'a>);
    let lanes: Vec<Lane<'_>> = vec![
        ("serdes loop -> Arrow columns", Box::new(|| serdes_loop(&def, &bodies))),
        ("prost-reflect DynamicMessage -> Arrow builders", Box::new(|| prost_reflect(&desc, &bodies, true))),
        ("prost-reflect DynamicMessage alone", Box::new(|| prost_reflect(&desc, &bodies, false))),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); lanes.len()];
    for turn in 0..32 {
        for (i, (_, lane)) in lanes.iter().enumerate() {
            let t = Instant::now();
            let n = lane();
            if turn > 0 {
                times[i].push(t.elapsed().as_nanos() as f64 / n as f64); // the first turn warms up
            }
        }
    }
    let serdes = median(&times[0]);
    for (i, (name, _)) in lanes.iter().enumerate() {
        let m = median(&times[i]);
        println!("{name}: {m:.1} ns/record ({:.2}x serdes' loop)", m / serdes);
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
