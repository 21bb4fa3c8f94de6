package omprpc

// BindingVersion is the omprpc release this package belongs to: the same number as
// Cargo.toml's version, the header's OMPRPC_VERSION_STRING and the Python and Node packages
// (tests/versions.rs checks them; `make set-version V=x.y.z` rewrites them). Version()
// reports the version of the library actually loaded.
const BindingVersion = "0.1.0"
