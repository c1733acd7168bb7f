//! The benchmarks' arrow-json lane (feature `arrow-json-floor`): arrow-json's tape decoder over
//! the same records into the same columns, to measure serdes' parser against. arrow-json checks
//! JSON syntax and the columns' types (strict mode: no undeclared field), no JSON Schema keyword.
use std::sync::Arc;

use arrow_json::ReaderBuilder;
use arrow_schema::{DataType, Schema};

use super::columns::data_type;
use super::program::Program;

/// Nanoseconds of each of `reps` decodes of `bodies` (laid end to end, one per line) by arrow-json.
pub fn arrow_json_ns(program: &Program, bodies: &[&[u8]], reps: usize) -> Result<Vec<u64>, String> {
    let DataType::Struct(fields) = data_type(program, 0) else { return Err("the root is not a struct".into()) };
    let schema = Arc::new(Schema::new(fields));
    let mut all = Vec::with_capacity(bodies.iter().map(|b| b.len() + 1).sum());
    for b in bodies {
        all.extend_from_slice(b);
        all.push(b'\n');
    }
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut decoder = ReaderBuilder::new(Arc::clone(&schema))
            .with_batch_size(bodies.len().max(1))
            .with_strict_mode(true)
            .build_decoder()
            .map_err(|e| e.to_string())?;
        let t = std::time::Instant::now();
        let n = decoder.decode(&all).map_err(|e| e.to_string())?;
        let batch = decoder.flush().map_err(|e| e.to_string())?;
        out.push(t.elapsed().as_nanos() as u64);
        if n != all.len() || batch.map_or(0, |b| b.num_rows()) != bodies.len() {
            return Err("arrow-json did not decode every record".into());
        }
    }
    Ok(out)
}
