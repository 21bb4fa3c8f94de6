package omprpc

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Options.Launcher reaches the library: the agent runs behind a wrapper script that records
// its words (the version probe's, then the agent's), and Info names the launcher.
// docs/launcher.md has the rest (bwrap, unshare, ssh, teardown).
func TestLauncherRunsTheAgentBehindAWrapper(t *testing.T) {
	if runtime.GOOS == "windows" {
		// The wrapper is a #! script; a Windows launcher is a program (ssh.exe, wsl.exe), and
		// the library refuses batch files as agents and launchers (docs/windows.md).
		t.Skip("the launcher here is a POSIX shell script")
	}
	dir := tempDir(t)
	log := filepath.Join(dir, "launcher.log")
	wrapper := filepath.Join(dir, "wrap")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fakeOptions()
	opts.Command = append(opts.Command, "--mode", "rpc")
	opts.Launcher = []string{wrapper}
	c := start(t, opts)
	if got := turn(t, c, "hello"); got.AssistantText == nil || *got.AssistantText != "pong" {
		t.Fatalf("assistant text %v", got.AssistantText)
	}
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Launcher) != 1 || info.Launcher[0] != wrapper || info.Argv[0] != wrapper {
		t.Fatalf("info: launcher %q argv %q", info.Launcher, info.Argv)
	}
	text, _ := os.ReadFile(log)
	runs := strings.Split(strings.TrimSpace(string(text)), "\n")
	want := strings.Join(info.Argv[1:], " ")
	if len(runs) != 2 || !strings.HasSuffix(runs[0], " --version") || runs[1] != want {
		t.Fatalf("the launcher ran %q, want the probe then %q", runs, want)
	}
}
