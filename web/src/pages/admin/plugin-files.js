// Reading the files of a plugin upload: the manifest (plugin.toml, or the same as JSON) into the
// object the API takes, and the component into base64.

// The manifest in `text`; JSON when the file says so, else plugin.toml.
export function parseManifest(text, fileName) {
  if (/\.json$/i.test(fileName) || text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`${fileName}: ${error.message}`);
    }
  }
  return parseToml(text, fileName);
}

// Base64 of `bytes`, a chunk at a time (one String.fromCharCode call over a whole component
// would overflow the call stack). Chunks are a multiple of 3 bytes, so their encodings join.
export function base64(bytes) {
  const chunk = 3 * 8192;
  const parts = [];
  for (let start = 0; start < bytes.length; start += chunk) {
    parts.push(btoa(String.fromCharCode.apply(null, bytes.subarray(start, start + chunk))));
  }
  return parts.join('');
}

const ESCAPES = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };

// The part of TOML that manifests use: `key = value` lines, `[table.path]` headers, basic and
// literal strings, numbers, booleans, arrays (over several lines too) and comments. Anything
// else is refused with its line, rather than read wrongly.
function parseToml(text, fileName) {
  // Tables without a prototype, so that no key can reach Object.prototype.
  const table = () => Object.create(null);
  const root = table();
  let current = root;
  let i = 0;
  let line = 1;
  const fail = (why) => {
    throw new Error(`${fileName} line ${line}: ${why}`);
  };

  const skipSpace = () => {
    while (text[i] === ' ' || text[i] === '\t') i += 1;
  };
  const skipComment = () => {
    if (text[i] === '#') while (i < text.length && text[i] !== '\n') i += 1;
  };
  // Spaces, comments and line ends (between lines, and inside arrays).
  const skipBlank = () => {
    for (;;) {
      skipSpace();
      skipComment();
      if (text[i] === '\n') line += 1;
      else if (text[i] !== '\r') return;
      i += 1;
    }
  };
  const endOfLine = () => {
    skipSpace();
    skipComment();
    if (i < text.length && text[i] !== '\n' && text[i] !== '\r') fail('unexpected text after the value');
  };

  function string() {
    const quote = text[i];
    if (text.startsWith(quote.repeat(3), i)) fail('multi-line strings are not supported; give the manifest as JSON');
    i += 1;
    let out = '';
    while (text[i] !== quote) {
      if (i >= text.length || text[i] === '\n') fail('the string does not end on its line');
      if (quote === '"' && text[i] === '\\') {
        const code = text[i + 1];
        if (code in ESCAPES) {
          out += ESCAPES[code];
          i += 2;
        } else if (code === 'u' || code === 'U') {
          const hex = text.slice(i + 2, i + (code === 'u' ? 6 : 10));
          if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== (code === 'u' ? 4 : 8)) fail('a \\u escape needs its hex digits');
          out += String.fromCodePoint(parseInt(hex, 16));
          i += 2 + hex.length;
        } else fail(`unknown escape \\${code}`);
      } else {
        out += text[i];
        i += 1;
      }
    }
    i += 1;
    return out;
  }

  function key() {
    const parts = [];
    for (;;) {
      skipSpace();
      if (text[i] === '"' || text[i] === "'") parts.push(string());
      else {
        const bare = /^[A-Za-z0-9_-]+/.exec(text.slice(i, i + 256));
        if (!bare) fail('expected a key');
        parts.push(bare[0]);
        i += bare[0].length;
      }
      skipSpace();
      if (text[i] !== '.') return parts;
      i += 1;
    }
  }

  function value() {
    if (text[i] === '"' || text[i] === "'") return string();
    if (text[i] === '[') {
      i += 1;
      const list = [];
      for (;;) {
        skipBlank();
        if (text[i] === ']') {
          i += 1;
          return list;
        }
        list.push(value());
        skipBlank();
        if (text[i] === ',') i += 1;
        else if (text[i] !== ']') fail('expected , or ] in the array');
      }
    }
    const word = /^[^\s,\]#]+/.exec(text.slice(i, i + 256));
    if (!word) fail('expected a value');
    i += word[0].length;
    if (word[0] === 'true' || word[0] === 'false') return word[0] === 'true';
    const number = word[0].replace(/(\d)_(?=\d)/g, '$1');
    if (!/^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(number)) fail(`cannot read the value ${word[0]}`);
    return Number(number);
  }

  // The table at `parts` under `from`, made when missing.
  function descend(from, parts) {
    let node = from;
    for (const part of parts) {
      if (!(part in node)) node[part] = table();
      else if (typeof node[part] !== 'object' || Array.isArray(node[part])) fail(`${parts.join('.')} is not a table`);
      node = node[part];
    }
    return node;
  }

  while (i < text.length) {
    skipBlank();
    if (i >= text.length) break;
    if (text[i] === '[') {
      if (text[i + 1] === '[') fail('arrays of tables are not supported');
      i += 1;
      const parts = key();
      if (text[i] !== ']') fail('expected ] after the table name');
      i += 1;
      current = descend(root, parts);
    } else {
      const parts = key();
      if (text[i] !== '=') fail('expected = after the key');
      i += 1;
      skipSpace();
      const node = descend(current, parts.slice(0, -1));
      const last = parts[parts.length - 1];
      if (last in node) fail(`${parts.join('.')} is given twice`);
      node[last] = value();
    }
    endOfLine();
  }
  return root;
}
