//go:build !linux

package omprpc

// adviseHugePages is a Linux hint (hugepages_linux.go).
func adviseHugePages([]byte) {}
