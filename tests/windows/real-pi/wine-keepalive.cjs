// Loaded into pi's Node first (NODE_OPTIONS=--require), under Wine only: make windows-real-pi.
//
// Wine 8.0's setsockopt refuses the TCP keep-alive options (TCP_KEEPALIVE, TCP_KEEPINTVL,
// TCP_KEEPCNT: WSAENOPROTOOPT, 10042). A socket asked for keep-alive while it connects then fails
// its connect with UNKNOWN (-4094; libuv does not map 10042), and pi's HTTP client (undici, the
// fetch of Node and of pi's provider SDKs) asks so for every connection: each model call fails
// with "Connection error.: connect UNKNOWN 127.0.0.1:<port>". Asked once connected, the same
// call fails silently (Node ignores its result), so this defers the request to the connect.
// Windows itself has the options (Windows 10 1709 on): this is a fixture for Wine, like
// tests/windows/bcryptprimitives.c, never shipped. docs/windows.md has the measurements.
"use strict";
const net = require("node:net");

const setKeepAlive = net.Socket.prototype.setKeepAlive;
net.Socket.prototype.setKeepAlive = function (...args) {
  if (this.connecting) {
    this.once("connect", () => setKeepAlive.apply(this, args));
    return this;
  }
  return setKeepAlive.apply(this, args);
};
