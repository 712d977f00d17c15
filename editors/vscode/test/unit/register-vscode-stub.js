// Preload: `require('vscode')` returns the stub (node --require ./register-vscode-stub.js --test).
'use strict';
const Module = require('node:module');
const stub = require('./vscode-stub');
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  return request === 'vscode' ? stub : originalLoad.call(this, request, parent, isMain);
};
