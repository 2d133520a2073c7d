//go:build !unix

package procstatus

import "os"

// signal is "": signals are a unix notion.
func signal(*os.ProcessState) string { return "" }
