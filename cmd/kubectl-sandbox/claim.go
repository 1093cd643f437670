// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/scheme"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func newClaimCommand(o *options) *cobra.Command {
	var (
		template, pool, name, generateName string
		labels, annotations                []string
		wait                               bool
		timeout, shutdownAfter             time.Duration
	)
	printFlags := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "claim (--template TEMPLATE | --pool POOL) [--wait] [--name NAME | --generate-name PREFIX]",
		Short: "Claim a sandbox from a template or a warm pool",
		Example: `  kubectl sandbox claim --template python-runtime-template --wait
  kubectl sandbox claim --pool python-pool --name mine --wait -o jsonpath='{.status.sandbox.name}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var source sandbox.Source
			switch {
			case template != "" && pool == "":
				source = sandbox.FromTemplate(template)
			case pool != "" && template == "":
				source = sandbox.FromPool(pool)
			default:
				return errors.New("give exactly one of --template and --pool")
			}
			opts := []sandbox.ClaimOption{}
			if !wait {
				opts = append(opts, sandbox.WithoutWait())
			}
			if name != "" {
				opts = append(opts, sandbox.WithName(name))
			}
			if generateName != "" {
				opts = append(opts, sandbox.WithGenerateName(generateName))
			}
			labelMap, err := parsePairs("--label", labels)
			if err != nil {
				return err
			}
			annotationMap, err := parsePairs("--annotation", annotations)
			if err != nil {
				return err
			}
			opts = append(opts, sandbox.WithLabels(labelMap), sandbox.WithAnnotations(annotationMap))
			if shutdownAfter > 0 {
				opts = append(opts, sandbox.WithShutdownTime(time.Now().Add(shutdownAfter)))
			}
			printer, err := printFlags.ToPrinter()
			if err != nil {
				return err
			}
			client, namespace, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			if wait {
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			sb, err := client.Claim(ctx, namespace, source, opts...)
			if err != nil {
				return err
			}
			claim, err := client.Clientset().ExtensionsV1beta1().SandboxClaims(namespace).Get(context.WithoutCancel(ctx), sb.Name(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			return printer.PrintObj(claim, o.Out)
		},
	}
	cmd.Flags().StringVar(&template, "template", "", "the SandboxTemplate to claim a sandbox of")
	cmd.Flags().StringVar(&pool, "pool", "", "the SandboxWarmPool to claim a member of")
	cmd.Flags().StringVar(&name, "name", "", "the claim's name (default: generated)")
	cmd.Flags().StringVar(&generateName, "generate-name", "", "the prefix of the claim's generated name (default "+sandbox.DefaultGenerateName+")")
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "a label KEY=VALUE of the claim (repeatable)")
	cmd.Flags().StringArrayVar(&annotations, "annotation", nil, "an annotation KEY=VALUE of the claim (repeatable)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the claim is Ready")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait, how long to wait")
	cmd.Flags().DurationVar(&shutdownAfter, "shutdown-after", 0, "have the server delete the claim this long from now (e.g. 2h)")
	// Only -o: kubectl's --template (a Go template for output) would clash with ours.
	cmd.Flags().StringVarP(printFlags.OutputFormat, "output", "o", "",
		"output format: "+strings.Join(printFlags.AllowedFormats(), ", ")+" (default: the name and what was done)")
	return cmd
}

// parsePairs parses KEY=VALUE flags.
func parsePairs(flag string, pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range pairs {
		key, value, ok := strings.Cut(pair, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, pair)
		}
		out[key] = value
	}
	return out, nil
}
