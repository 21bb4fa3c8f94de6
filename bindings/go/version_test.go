package omprpc

import "testing"

// The package and the library it links were built from the same checkout, so they agree.
func TestBindingVersionMatchesLibrary(t *testing.T) {
	if got := Version(); got != BindingVersion {
		t.Fatalf("library version %q, BindingVersion %q", got, BindingVersion)
	}
}
