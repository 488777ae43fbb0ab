//go:build !unix

package bench

import "os"

// peakRSS is unknown here (shown as "-").
func peakRSS(*os.ProcessState) int64 { return 0 }
