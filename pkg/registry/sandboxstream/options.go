// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AddToScheme registers the query types of the streaming subresources, the same ones as their
// pods/* counterparts (corev1.PodExecOptions, PodAttachOptions, PodLogOptions,
// PodPortForwardOptions), in each given group version, with their decoding from a query.
func AddToScheme(scheme *runtime.Scheme, gvs ...schema.GroupVersion) error {
	for _, gv := range gvs {
		scheme.AddKnownTypes(gv, &corev1.PodExecOptions{}, &corev1.PodAttachOptions{}, &corev1.PodLogOptions{}, &corev1.PodPortForwardOptions{})
	}
	conversions := []struct {
		out any
		fn  func(url.Values, any) error
	}{
		{(*corev1.PodExecOptions)(nil), func(q url.Values, out any) error { return decodeExec(q, out.(*corev1.PodExecOptions)) }},
		{(*corev1.PodAttachOptions)(nil), func(q url.Values, out any) error { return decodeAttach(q, out.(*corev1.PodAttachOptions)) }},
		{(*corev1.PodLogOptions)(nil), func(q url.Values, out any) error { return decodeLog(q, out.(*corev1.PodLogOptions)) }},
		{(*corev1.PodPortForwardOptions)(nil), func(q url.Values, out any) error {
			return decodePortForward(q, out.(*corev1.PodPortForwardOptions))
		}},
	}
	for _, c := range conversions {
		fn := c.fn
		if err := scheme.AddConversionFunc((*url.Values)(nil), c.out, func(in, out any, _ conversion.Scope) error {
			return fn(*in.(*url.Values), out)
		}); err != nil {
			return err
		}
	}
	return nil
}

// query reads typed parameters, collecting an error per parameter that does not parse.
type query struct {
	values url.Values
	errs   field.ErrorList
}

func (q *query) bool(name string) bool {
	var b bool
	in := q.values[name]
	_ = runtime.Convert_Slice_string_To_bool(&in, &b, nil)
	return b
}

func (q *query) string(name string) string { return q.values.Get(name) }

func (q *query) int64(name string) *int64 {
	if _, ok := q.values[name]; !ok {
		return nil
	}
	n, err := strconv.ParseInt(q.values.Get(name), 10, 64)
	if err != nil {
		q.errs = append(q.errs, field.Invalid(field.NewPath(name), q.values.Get(name), "must be an integer"))
		return nil
	}
	return &n
}

// err is a 400 naming every parameter that does not parse, as kube-apiserver answers a bad query.
func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return apierrors.NewBadRequest(q.errs.ToAggregate().Error())
}

func decodeExec(values url.Values, out *corev1.PodExecOptions) error {
	q := &query{values: values}
	*out = corev1.PodExecOptions{
		Stdin: q.bool("stdin"), Stdout: q.bool("stdout"), Stderr: q.bool("stderr"), TTY: q.bool("tty"),
		Container: q.string("container"), Command: values["command"],
	}
	return q.err()
}

func decodeAttach(values url.Values, out *corev1.PodAttachOptions) error {
	q := &query{values: values}
	*out = corev1.PodAttachOptions{
		Stdin: q.bool("stdin"), Stdout: q.bool("stdout"), Stderr: q.bool("stderr"), TTY: q.bool("tty"),
		Container: q.string("container"),
	}
	return q.err()
}

func decodeLog(values url.Values, out *corev1.PodLogOptions) error {
	q := &query{values: values}
	*out = corev1.PodLogOptions{
		Container: q.string("container"), Follow: q.bool("follow"), Previous: q.bool("previous"),
		Timestamps: q.bool("timestamps"), InsecureSkipTLSVerifyBackend: q.bool("insecureSkipTLSVerifyBackend"),
		SinceSeconds: q.int64("sinceSeconds"), TailLines: q.int64("tailLines"), LimitBytes: q.int64("limitBytes"),
	}
	if s, ok := values["sinceTime"]; ok {
		t, err := time.Parse(time.RFC3339, values.Get("sinceTime"))
		if err != nil {
			q.errs = append(q.errs, field.Invalid(field.NewPath("sinceTime"), s[0], "must be an RFC 3339 time"))
		} else {
			out.SinceTime = &metav1.Time{Time: t}
		}
	}
	if _, ok := values["stream"]; ok {
		s := values.Get("stream")
		out.Stream = &s
	}
	return q.err()
}

func decodePortForward(values url.Values, out *corev1.PodPortForwardOptions) error {
	q := &query{values: values}
	*out = corev1.PodPortForwardOptions{}
	for i, p := range values["ports"] {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			q.errs = append(q.errs, field.Invalid(field.NewPath("ports").Index(i), p, "must be a port number between 1 and 65535"))
			continue
		}
		out.Ports = append(out.Ports, int32(n))
	}
	return q.err()
}

// validateExec refuses what the pod's exec would refuse anyway, before a sandbox is woken for it.
func validateExec(opts *corev1.PodExecOptions) field.ErrorList {
	var errs field.ErrorList
	if len(opts.Command) == 0 {
		errs = append(errs, field.Required(field.NewPath("command"), "at least one command word is required"))
	}
	errs = append(errs, validateStreams(opts.Stdin, opts.Stdout, opts.Stderr)...)
	return errs
}

func validateStreams(stdin, stdout, stderr bool) field.ErrorList {
	if !stdin && !stdout && !stderr {
		return field.ErrorList{field.Required(field.NewPath("stdout"), "at least one of stdin, stdout and stderr must be true")}
	}
	return nil
}

// validateLog checks the log query as kube-apiserver checks pods/log's. It refuses
// insecureSkipTLSVerifyBackend: the request to the node is made with the server's identity, and
// this server never asks for it without verification.
func validateLog(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	if opts.SinceSeconds != nil && *opts.SinceSeconds < 1 {
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if opts.SinceSeconds != nil && opts.SinceTime != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sinceTime"), "at most one of sinceTime and sinceSeconds may be set"))
	}
	if opts.Stream != nil {
		switch *opts.Stream {
		case corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *opts.Stream, []string{corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll}))
		}
		if *opts.Stream != corev1.LogStreamAll && opts.TailLines != nil {
			errs = append(errs, field.Forbidden(field.NewPath("tailLines"), "may only be set with stream All"))
		}
	}
	if opts.InsecureSkipTLSVerifyBackend {
		errs = append(errs, field.Forbidden(field.NewPath("insecureSkipTLSVerifyBackend"), "this server reads logs only over verified connections"))
	}
	return errs
}
