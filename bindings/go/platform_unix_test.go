//go:build unix

package omprpc

// What the tests ask of the operating system, Unix side (platform_windows_test.go has the
// Windows side).

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// tempDir is t.TempDir (see the Windows side for why it is not called directly).
func tempDir(t *testing.T) string {
	return t.TempDir()
}

// checkPrivate fails the test unless path has exactly the mode perm (the library's private
// files and directories: 0600, 0700).
func checkPrivate(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != perm {
		t.Fatalf("%s: %v %v, want mode %v", path, st, err, perm)
	}
}

// removeTree is os.RemoveAll (see the Windows side for why it has a name of its own).
func removeTree(dir string) error {
	return os.RemoveAll(dir)
}

// heartbeat is the fake agent's grandchild's last beat (the time it wrote into path), "" when
// there is none.
func heartbeat(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// underWine: Wine runs only Windows programs.
func underWine() bool { return false }

// processExists reports whether a process has the id pid (a zombie still has it); err when
// that cannot be told.
func processExists(pid int) (bool, error) {
	switch err := syscall.Kill(pid, 0); {
	case err == nil, errors.Is(err, syscall.EPERM):
		return true, nil
	case errors.Is(err, syscall.ESRCH):
		return false, nil
	default:
		return false, err
	}
}

// processGroupExists reports whether the process group pgid has a member.
func processGroupExists(pgid int) (bool, error) {
	return processExists(-pgid)
}

// killProcess ends pid at once (a test's own leftover).
func killProcess(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
