// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
)

// The types embedded from agents.x-k8s.io convert with that group's generated functions.
// conversion-gen skips generated files when it scans other packages, so they are named here.

func Convert_v1alpha1_PodTemplate_To_agents_PodTemplate(in *agentsv1alpha1.PodTemplate, out *agents.PodTemplate, s conversion.Scope) error {
	return agentsv1alpha1.Convert_v1alpha1_PodTemplate_To_agents_PodTemplate(in, out, s)
}

func Convert_agents_PodTemplate_To_v1alpha1_PodTemplate(in *agents.PodTemplate, out *agentsv1alpha1.PodTemplate, s conversion.Scope) error {
	return agentsv1alpha1.Convert_agents_PodTemplate_To_v1alpha1_PodTemplate(in, out, s)
}

func Convert_v1alpha1_PodMetadata_To_agents_PodMetadata(in *agentsv1alpha1.PodMetadata, out *agents.PodMetadata, s conversion.Scope) error {
	return agentsv1alpha1.Convert_v1alpha1_PodMetadata_To_agents_PodMetadata(in, out, s)
}

func Convert_agents_PodMetadata_To_v1alpha1_PodMetadata(in *agents.PodMetadata, out *agentsv1alpha1.PodMetadata, s conversion.Scope) error {
	return agentsv1alpha1.Convert_agents_PodMetadata_To_v1alpha1_PodMetadata(in, out, s)
}
