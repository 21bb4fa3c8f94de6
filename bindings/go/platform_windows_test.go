package omprpc

// What the tests ask of the operating system, Windows side (platform_unix_test.go has the
// Unix side).

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// tempDir is t.TempDir, but removed with removeTree: t.TempDir's cleanup is os.RemoveAll,
// which fails under Wine 8.0 (see removeTree), so every test with a temporary directory would
// fail in its cleanup there.
func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "omprpc-go-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeTree(dir); err != nil {
			t.Errorf("removing the test's temporary directory: %v", err)
		}
	})
	return dir
}

// removeTree is os.RemoveAll file by file (DeleteFile, RemoveDirectory). os.RemoveAll asks
// NtSetInformationFile for FileDispositionInformationEx (POSIX delete semantics, Windows 10
// 1607 on); Wine 8.0 answers with a status Go does not fall back from ("Invalid function").
func removeTree(dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return err
	})
	slices.Reverse(paths) // what a directory holds, before the directory
	for _, p := range paths {
		if e := os.Remove(p); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// checkPrivate: on Windows a private file or directory is one whose DACL grants only its
// owner and SYSTEM, which the library sets (src/env/windows.rs, tested there, under Wine
// too); Go's FileMode shows only the read-only attribute there, so nothing is read here but
// that the path exists.
func checkPrivate(t *testing.T, path string, _ os.FileMode) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// heartbeat tells the fake agent's grandchild's beats apart by the file's modification time,
// without opening it: the grandchild writes each beat to a temporary file renamed over path,
// and a rename over a file another process holds open fails on Windows (under Wine even with
// FILE_SHARE_DELETE), which ends the grandchild. "" when there is no beat.
func heartbeat(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return st.ModTime().String()
}

// underWine: ntdll exports wine_get_version only under Wine (tests/client.rs asks the same).
func underWine() bool {
	return syscall.NewLazyDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// OpenProcess's answer for an id no process has.
const errorInvalidParameter = syscall.Errno(87)

// processExists reports whether a process has the id pid and has not exited; err when that
// cannot be told. A process object outlives its exit while a handle holds it, so the handle
// is waited on instead of trusting that it opens.
func processExists(pid int) (bool, error) {
	h, err := syscall.OpenProcess(syscall.SYNCHRONIZE, false, uint32(pid))
	if errors.Is(err, errorInvalidParameter) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer syscall.CloseHandle(h)
	switch ev, err := syscall.WaitForSingleObject(h, 0); ev {
	case syscall.WAIT_OBJECT_0:
		return false, nil
	case syscall.WAIT_TIMEOUT:
		return true, nil
	default:
		return false, err
	}
}

// processGroupExists: Windows has no process groups. The agent and what it starts are in the
// library's Job object, whose end tests/client.rs checks under Wine (the grandchild ends with
// the job) and TestCloseKillsGrandchildren here.
func processGroupExists(int) (bool, error) {
	return false, errors.ErrUnsupported
}

// killProcess ends pid at once (a test's own leftover).
func killProcess(pid int) {
	h, err := syscall.OpenProcess(syscall.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return
	}
	defer syscall.CloseHandle(h)
	_ = syscall.TerminateProcess(h, 1)
}
