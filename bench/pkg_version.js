// SPDX-License-Identifier: BSD-3-Clause
// What the node halves of the benchmarks share: the version of an
// installed package, from its own package.json (found upwards from its
// entry point); 'unknown' when none names it.
'use strict';
const fs = require('fs');
const path = require('path');

module.exports = function version(name) {
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    const f = path.join(dir, 'package.json');
    if (fs.existsSync(f)) {
      const p = JSON.parse(fs.readFileSync(f, 'utf8'));
      if (p.name === name) return p.version;
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
};
