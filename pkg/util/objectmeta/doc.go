// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package objectmeta holds the rules about our objects' metadata that the registry, the
// controllers and the warm adoption all apply: who controls a child (OwnershipOf), which
// namespace an object was made in (NamespaceUID), and the hashed names and labels the
// controllers derive (NameHash). It sits below every layer that uses it and imports none of them.
package objectmeta
