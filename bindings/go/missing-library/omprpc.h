/* Not the omprpc header: the stand-in the default and omprpc_release builds find when the real
 * one is not where they look (../../include, i.e. outside a checkout of the repository — the
 * module as `go get` fetches it). cgo's own error would only say "omprpc.h: No such file";
 * this one says what to do. link_debug.go and link_release.go put this directory last on the
 * include path, so in a checkout the real header always wins. */
#error "omprpc: the omprpc C library and header were not found. This build (no tags) links the debug library of a checkout of the repository (cargo build). Without Rust, use a release archive: unpack omprpc-VERSION-linux-x86_64.tar.gz (a release, or make dist in a checkout), then build with: PKG_CONFIG_PATH=<unpacked>/lib/pkgconfig go build -tags omprpc_system (README: Install without Rust)"
