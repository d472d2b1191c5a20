package main

import (
	"os"
	"testing"
)

// mainEnv, when set to "1", makes the test binary run main() with the arguments
// after "--": a test re-executes itself as the driftpreview binary to send it
// real signals (TestCommentSignals).
const mainEnv = "DRIFTPREVIEW_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"driftpreview"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}
