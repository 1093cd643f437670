// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// tableAccept asks for a server-side table, as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// getTable GETs path with the table Accept header and decodes the answer.
func getTable(t *testing.T, client rest.Interface, path string) *metav1.Table {
	t.Helper()
	ctx := testContext(t)
	raw, err := client.Get().AbsPath(path).SetHeader("Accept", tableAccept).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s as Table: %v", path, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("GET %s as Table answered %s %s", path, table.APIVersion, table.Kind)
	}
	return &table
}

func columnNames(table *metav1.Table) []string {
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

// cell returns the cell of row in the named column.
func cell(t *testing.T, table *metav1.Table, row int, column string) any {
	t.Helper()
	for i, c := range table.ColumnDefinitions {
		if c.Name == column {
			return table.Rows[row].Cells[i]
		}
	}
	t.Fatalf("no column %q in %v", column, columnNames(table))
	return nil
}

// TestTables checks the server-side table columns of every kind and a few of their cells.
func TestTables(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := testContext(t)
	const ns = "tables"

	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, "sb"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb.Status.Replicas = 1
	sb.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue, "DependenciesReady")}
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := newTemplate(ns, "tmpl")
	tmpl.Spec.Service = ptr.To(true)
	if _, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "claim", "tmpl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, newPool(ns, "pool", "tmpl", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool.Status = extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1}
	if _, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).UpdateStatus(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		path    string
		name    string
		columns []string
		cells   map[string]any
	}{
		{
			path:    "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes",
			name:    "sb",
			columns: []string{"Name", "Ready", "Reason", "Replicas", "Service", "Pod IPs", "Shutdown Time", "Age"},
			cells:   map[string]any{"Ready": "True", "Reason": "DependenciesReady", "Replicas": float64(1)},
		},
		{
			path:    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims",
			name:    "claim",
			columns: []string{"Name", "Template", "Sandbox", "Ready", "Reason", "Warm Pool", "Pod IPs", "Age"},
			cells:   map[string]any{"Template": "tmpl", "Ready": "Unknown", "Warm Pool": "default"},
		},
		{
			path:    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxtemplates",
			name:    "tmpl",
			columns: []string{"Name", "Network Policy", "Env Injection", "Service", "Images", "Age"},
			cells:   map[string]any{"Network Policy": "Managed", "Env Injection": "Disallowed", "Service": "true", "Images": "busybox:1.36"},
		},
		{
			path:    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxwarmpools",
			name:    "pool",
			columns: []string{"Name", "Ready", "Replicas", "Template", "Current", "Update Strategy", "Selector", "Age"},
			cells:   map[string]any{"Ready": float64(1), "Replicas": float64(3), "Template": "tmpl", "Current": float64(2), "Update Strategy": "OnReplenish"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{c.path, c.path + "/" + c.name} {
				table := getTable(t, s.Client.AgentsV1beta1().RESTClient(), path)
				if got := columnNames(table); fmt.Sprint(got) != fmt.Sprint(c.columns) {
					t.Errorf("%s: columns %q, want %q", path, got, c.columns)
				}
				if len(table.Rows) != 1 {
					t.Fatalf("%s: %d rows, want 1", path, len(table.Rows))
				}
				if len(table.Rows[0].Cells) != len(c.columns) {
					t.Fatalf("%s: %d cells for %d columns", path, len(table.Rows[0].Cells), len(c.columns))
				}
				if got := cell(t, table, 0, "Name"); got != c.name {
					t.Errorf("%s: Name %v, want %s", path, got, c.name)
				}
				if got := cell(t, table, 0, "Age"); got == "" || got == "<unknown>" {
					t.Errorf("%s: Age %v", path, got)
				}
				for column, want := range c.cells {
					if got := cell(t, table, 0, column); got != want {
						t.Errorf("%s: %s is %#v, want %#v", path, column, got, want)
					}
				}
				if table.ResourceVersion == "" {
					t.Errorf("%s: the table has no resourceVersion", path)
				}
			}
			// The v1alpha1 endpoints print the same columns.
			alpha := getTable(t, s.Client.AgentsV1beta1().RESTClient(), replaceVersion(c.path))
			if got := columnNames(alpha); fmt.Sprint(got) != fmt.Sprint(c.columns) {
				t.Errorf("v1alpha1 columns %q, want %q", got, c.columns)
			}
		})
	}

	t.Run("wide columns have priority 1", func(t *testing.T) {
		table := getTable(t, s.Client.AgentsV1beta1().RESTClient(), cases[0].path)
		for _, c := range table.ColumnDefinitions {
			wide := c.Name == "Service" || c.Name == "Pod IPs" || c.Name == "Shutdown Time"
			if (c.Priority == 1) != wide {
				t.Errorf("column %s has priority %d", c.Name, c.Priority)
			}
		}
	})
}

// replaceVersion turns a v1beta1 path into the v1alpha1 one.
func replaceVersion(path string) string {
	return strings.Replace(path, "/v1beta1/", "/v1alpha1/", 1)
}
