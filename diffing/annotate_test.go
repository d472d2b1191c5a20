package diffing

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAnnotateDrift(t *testing.T) {
	at := time.Date(2026, 11, 2, 3, 14, 0, 0, time.UTC)
	diff := "@@ -1,4 +1,4 @@\n data:\n-  LOG_LEVEL: debug\n+  LOG_LEVEL: info\n spec:\n-  replicas: 5\n+  replicas: 2\n"
	tests := []struct {
		name string
		f    Finding
		want string
	}{
		{"map key with time", Finding{Path: "/data/LOG_LEVEL", Manager: "kubectl-edit", Since: &at},
			"@@ -1,4 +1,4 @@\n data:\n-  LOG_LEVEL: debug   # kubectl-edit, 2026-11-02 03:14 UTC\n+  LOG_LEVEL: info\n spec:\n-  replicas: 5\n+  replicas: 2\n"},
		{"no time (scale subresource)", Finding{Path: "/spec/replicas", Manager: "kubectl-scale"},
			"@@ -1,4 +1,4 @@\n data:\n-  LOG_LEVEL: debug\n+  LOG_LEVEL: info\n spec:\n-  replicas: 5   # kubectl-scale\n+  replicas: 2\n"},
		{"list index names no line", Finding{Path: "/spec/containers/0", Manager: "kubectl-edit"}, diff},
		{"field not in the diff", Finding{Path: "/data/OTHER", Manager: "kubectl-edit"}, diff},
		{"no manager", Finding{Path: "/data/LOG_LEVEL"}, diff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, annotateDrift(diff, tt.f)); diff != "" {
				t.Errorf("annotateDrift (-want +got):\n%s", diff)
			}
		})
	}
}
