// arrow_oracle.mjs - apache-arrow (npm) as test_arrow.py's oracle: it
// writes the Arrow IPC files and streams colstore imports, and reads files
// (its own and colstore's writer's) back for the comparison.
//
// One child per test run, fed one JSON request a line on stdin, answering
// one JSON line on stdout ({"error": "..."} on a failure):
//   {"write": path, "stream": bool, "batches": [[col, ...], ...], "schema": [...],
//    "compression": "lz4" | "zstd" (optional), "as_written": bool (optional:
//    leave apache-arrow's length prefixes as it wrote them, see fixPrefixes)}
//       each schema entry {name, type, nullable, dict}; each batch column a
//       list of values (null; integers of 64 bits as decimal strings;
//       binary as hex): writes the file, its bodies compressed when asked.
//   {"read": path}: {"columns": [{name, type, values}]}, values as above,
//       temporal types as their stored integers (not converted to dates).
//
//   node arrow_oracle.mjs        (cwd: the directory apache-arrow is in)
import * as A from 'apache-arrow';
import fs from 'node:fs';
import readline from 'node:readline';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const pkg = JSON.parse(fs.readFileSync('node_modules/apache-arrow/package.json', 'utf8'));

// Compressed bodies: apache-arrow reads and writes them only through codecs
// the application registers.  Where the client directory also holds lz4js
// (LZ4 frames, both ways), fzstd (a zstd decoder) and @oneidentity/zstd-js
// (the reference zstd compiled to WebAssembly, for encoding), they are
// registered and named in the ready line (test_arrow_codecs.py installs
// them; test_arrow.py's client has none).  A decoded buffer is copied to a
// fresh array: apache-arrow views it as typed arrays that must be aligned,
// and fzstd may return a view at any offset of a larger buffer.
const codecs = [];
const decoders = {};
try {
  const lz4 = (await import('lz4js')).default;
  decoders[A.CompressionType.LZ4_FRAME] = (b) => lz4.decompress(b).slice();
  A.compressionRegistry.set(A.CompressionType.LZ4_FRAME,
    { encode: (b) => lz4.compress(b), decode: decoders[A.CompressionType.LZ4_FRAME] });
  codecs.push('lz4');
} catch (e) { /* not installed */ }
try {
  const fzstd = await import('fzstd');
  const { ZstdStream } = await (await import('@oneidentity/zstd-js')).ZstdInit();
  decoders[A.CompressionType.ZSTD] = (b) => fzstd.decompress(b).slice();
  A.compressionRegistry.set(A.CompressionType.ZSTD,
    { encode: (b) => ZstdStream.compress(b, 3, false), decode: decoders[A.CompressionType.ZSTD] });
  codecs.push('zstd');
} catch (e) { /* not installed */ }

// apache-arrow up to 21.2.0 writes the compressed length in the 8-byte
// prefix of a compressed buffer, where the format (and Arrow C++, which
// rejects such files) wants the uncompressed length; the fix
// (apache/arrow-js#470) is merged but not released.  Its own reader sizes
// buffers from the codec's frame, so only other readers see it.  Until a
// release has the fix, the oracle puts the decoded length in each prefix
// after writing, in place (the lengths do not move anything), with the same
// decoders: the compressed frames themselves stay apache-arrow's.
function fixPrefixes(bytes, file) {
  const reader = new A.MessageReader(file ? bytes.subarray(8) : bytes);
  let m;
  while ((m = reader.readMessage()) !== null) {
    const body = reader.readMessageBody(m.bodyLength);
    const h = m.header();
    const batch = h && h.data ? h.data : h;
    if (!batch || !batch.compression) continue;
    const decode = decoders[batch.compression.type];
    for (const b of batch.buffers) {
      if (b.length < 8) continue;
      const view = new DataView(body.buffer, body.byteOffset + b.offset, 8);
      if (view.getBigInt64(0, true) === -1n) continue;
      const frame = body.subarray(b.offset + 8, b.offset + b.length);
      view.setBigInt64(0, BigInt(decode(frame).length), true);
    }
  }
}
out({ ready: pkg.version, codecs });

const TYPES = {
  int8: () => new A.Int8(), int16: () => new A.Int16(), int32: () => new A.Int32(), int64: () => new A.Int64(),
  uint8: () => new A.Uint8(), uint16: () => new A.Uint16(), uint32: () => new A.Uint32(),
  uint64: () => new A.Uint64(), float32: () => new A.Float32(), float64: () => new A.Float64(),
  float16: () => new A.Float16(), bool: () => new A.Bool(), utf8: () => new A.Utf8(),
  large_utf8: () => new A.LargeUtf8(), binary: () => new A.Binary(), large_binary: () => new A.LargeBinary(),
  date32: () => new A.DateDay(), date64: () => new A.DateMillisecond(),
  time32s: () => new A.TimeSecond(), time32ms: () => new A.TimeMillisecond(),
  time64us: () => new A.TimeMicrosecond(), time64ns: () => new A.TimeNanosecond(),
  ts_s: () => new A.TimestampSecond(), ts_ms: () => new A.TimestampMillisecond(),
  ts_us: () => new A.TimestampMicrosecond(), ts_ns: () => new A.TimestampNanosecond(),
  list_int32: () => new A.List(new A.Field('item', new A.Int32(), true)),
};

function arrowType(c) {
  const t = TYPES[c.type]();
  if (!c.dict) return t;
  const idx = { int8: new A.Int8(), int16: new A.Int16(), int32: new A.Int32(), uint8: new A.Uint8() }[c.dict];
  return new A.Dictionary(t, idx);
}

const ARRAYS = {
  int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array,
  uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array, float16: Uint16Array,
  float32: Float32Array, float64: Float64Array, date32: Int32Array, date64: BigInt64Array,
  time32s: Int32Array, time32ms: Int32Array, time64us: BigInt64Array, time64ns: BigInt64Array,
  ts_s: BigInt64Array, ts_ms: BigInt64Array, ts_us: BigInt64Array, ts_ns: BigInt64Array,
};

function bitmap(flags) {
  const b = new Uint8Array((flags.length + 7) >> 3);
  flags.forEach((f, i) => { if (f) b[i >> 3] |= 1 << (i & 7); });
  return b;
}

// The Data of values (nulls allowed) of a plain type, built from its raw
// buffers so the stored integers are exactly the ones given.
function plainData(type, t, values) {
  const length = values.length;
  const valid = values.map((v) => v !== null);
  const nullCount = valid.filter((v) => !v).length;
  const nullBitmap = nullCount ? bitmap(valid) : undefined;
  if (type === 'bool') return A.makeData({ type: t, length, nullCount, nullBitmap, data: bitmap(values.map((v) => !!v)) });
  if (['utf8', 'large_utf8', 'binary', 'large_binary'].includes(type)) {
    const parts = values.map((v) => (v === null ? new Uint8Array(0) : type.endsWith('binary') ? Buffer.from(v, 'hex') : Buffer.from(v, 'utf8')));
    const large = type.startsWith('large');
    const offsets = large ? new BigInt64Array(length + 1) : new Int32Array(length + 1);
    let at = 0;
    parts.forEach((p, i) => { at += p.length; offsets[i + 1] = large ? BigInt(at) : at; });
    const data = new Uint8Array(at);
    at = 0;
    parts.forEach((p) => { data.set(p, at); at += p.length; });
    return A.makeData({ type: t, length, nullCount, nullBitmap, valueOffsets: offsets, data });
  }
  if (type === 'list_int32') {
    const offsets = new Int32Array(length + 1);
    const flat = [];
    values.forEach((v, i) => { if (v) flat.push(...v); offsets[i + 1] = flat.length; });
    const child = plainData('int32', new A.Int32(), flat);
    return A.makeData({ type: t, length, nullCount, nullBitmap, valueOffsets: offsets, child });
  }
  const Arr = ARRAYS[type];
  const big = Arr === BigInt64Array || Arr === BigUint64Array;
  const data = new Arr(length);
  values.forEach((v, i) => { if (v !== null) data[i] = big ? BigInt(v) : v; });
  return A.makeData({ type: t, length, nullCount, nullBitmap, data });
}

// A dictionary column's batches share one dictionary that grows: a batch's
// new values are a chunk appended to it, which apache-arrow writes as a
// delta dictionary batch (the stream format) after the first.
function columnData(c, values, dicts) {
  const t = arrowType(c);
  if (!c.dict) return plainData(c.type, t, values);
  const d = dicts[c.name] || (dicts[c.name] = { index: new Map(), vector: null, n: 0 });
  const keys = [];
  const idx = values.map((v) => {
    if (v === null) return null;
    const k = JSON.stringify(v);
    if (!d.index.has(k)) { d.index.set(k, d.n + keys.length); keys.push(v); }
    return d.index.get(k);
  });
  if (keys.length || !d.vector) {
    const chunk = A.makeVector(plainData(c.type, t.dictionary, keys));
    d.vector = d.vector ? d.vector.concat(chunk) : chunk;
    d.n += keys.length;
  }
  const dictionary = d.vector;
  const valid = idx.map((v) => v !== null);
  const nullCount = valid.filter((v) => !v).length;
  const data = new (ARRAYS[c.dict])(values.length);
  idx.forEach((v, i) => { if (v !== null) data[i] = v; });
  return A.makeData({ type: t, length: values.length, nullCount, nullBitmap: nullCount ? bitmap(valid) : undefined, data, dictionary });
}

// Raw stored values: typed arrays for fixed-width types, get() otherwise.
function column(vec) {
  const values = [];
  for (const data of vec.data) {
    const t = data.type;
    const raw = !A.DataType.isDictionary(t) && !A.DataType.isBool(t) && !A.DataType.isUtf8(t) &&
      !A.DataType.isLargeUtf8(t) && !A.DataType.isBinary(t) && !A.DataType.isLargeBinary(t) && data.values &&
      data.values.BYTES_PER_ELEMENT && data.stride === 1;
    const inner = A.DataType.isDictionary(t) ? t.dictionary : t;
    for (let i = 0; i < data.length; i++) {
      if (!data.getValid(i)) { values.push(null); continue; }
      let v = raw ? data.values[data.offset + i] : vec.get(values.length);
      if (typeof v === 'bigint') v = v.toString();
      else if (v instanceof Uint8Array) v = Buffer.from(v).toString('hex');
      else if (typeof v === 'boolean') v = v ? 1 : 0;
      else if (A.DataType.isDate(inner) && v instanceof Date) v = v.getTime();
      values.push(v);
    }
  }
  return values;
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const req = JSON.parse(line);
  try {
    if (req.write) {
      const fields = req.schema.map((c) => new A.Field(c.name, arrowType(c), c.nullable));
      const schema = new A.Schema(fields);
      const dicts = {};
      const batches = req.batches.map((cols) => new A.RecordBatch(schema, A.makeData({
        type: new A.Struct(fields), length: cols[0].length, nullCount: 0,
        children: req.schema.map((c, k) => columnData(c, cols[k], dicts)),
      })));
      const table = new A.Table(schema, batches);
      const compressionType = { lz4: A.CompressionType.LZ4_FRAME, zstd: A.CompressionType.ZSTD }[req.compression];
      const Writer = req.stream ? A.RecordBatchStreamWriter : A.RecordBatchFileWriter;
      const bytes = compressionType === undefined ? A.tableToIPC(table, req.stream ? 'stream' : 'file')
        : new Writer({ compressionType }).writeAll(table).toUint8Array(true);
      if (compressionType !== undefined && !req.as_written) fixPrefixes(bytes, !req.stream);
      fs.writeFileSync(req.write, bytes);
      out({ ok: true, batches: table.batches.length });
    } else if (req.read) {
      const table = A.tableFromIPC(fs.readFileSync(req.read));
      out({
        columns: table.schema.fields.map((f, k) => ({ name: f.name, type: String(f.type), values: column(table.getChildAt(k)) })),
        batches: table.batches.length,
      });
    }
  } catch (e) {
    out({ error: String(e.stack || e) });
  }
}
