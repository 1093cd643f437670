// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// TableConvertor builds the server-side tables kubectl get prints, for one object or a list.

package common

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// RowFunc returns the cells of one object after its name, without the trailing Age.
type RowFunc func(obj runtime.Object) ([]interface{}, error)

// TableConvertor prints Name, the columns of a kind, then Age; columns with priority 1 show only under -o wide.
type TableConvertor struct {
	columns []metav1.TableColumnDefinition
	row     RowFunc
}

var _ rest.TableConvertor = TableConvertor{}

// NewTableConvertor returns a TableConvertor for the kind's own columns, whose cells row computes.
func NewTableConvertor(columns []metav1.TableColumnDefinition, row RowFunc) TableConvertor {
	all := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: "Name of the object."}}
	all = append(all, columns...)
	all = append(all, metav1.TableColumnDefinition{Name: "Age", Type: "date", Description: "Time since the object was created."})
	return TableConvertor{columns: all, row: row}
}

// ConvertToTable implements rest.TableConvertor.
func (c TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if o, ok := opts.(*metav1.TableOptions); !ok || !o.NoHeaders {
		table.ColumnDefinitions = c.columns
	}
	add := func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		cells, err := c.row(o)
		if err != nil {
			return err
		}
		row := metav1.TableRow{Object: runtime.RawExtension{Object: o}}
		row.Cells = append(row.Cells, m.GetName())
		row.Cells = append(row.Cells, cells...)
		row.Cells = append(row.Cells, Age(m.GetCreationTimestamp()))
		table.Rows = append(table.Rows, row)
		return nil
	}
	if meta.IsListType(obj) {
		if err := meta.EachListItem(obj, add); err != nil {
			return nil, err
		}
		if l, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
		return table, nil
	}
	if err := add(obj); err != nil {
		return nil, err
	}
	if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

// Age prints a timestamp the way kubectl prints ages, "<unknown>" when unset.
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// Condition returns the status and reason of a condition, or "Unknown" and "" when it is not set.
func Condition(conditions []metav1.Condition, condType string) (status, reason string) {
	for _, c := range conditions {
		if c.Type == condType {
			return string(c.Status), c.Reason
		}
	}
	return string(metav1.ConditionUnknown), ""
}

// OptionalInt32 prints a pointer to an int32, "<unset>" when nil.
func OptionalInt32(p *int32) string {
	if p == nil {
		return "<unset>"
	}
	return fmt.Sprint(*p)
}
