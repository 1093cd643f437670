// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fastpath holds the ways this server goes around the generic machinery where that
// machinery would do the same work twice: informers fed from the registries' own watch caches
// (InformerSource), decoded objects sharing the parts they hold alike (ShareParts), the storage
// wrappers that install both (WrapStorage, DecodedGetter), and etcd clients configured as the
// storage's are (EtcdClientConfig). docs/fastpath.md says why each exists and what it saves.
package fastpath
