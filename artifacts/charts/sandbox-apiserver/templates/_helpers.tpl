{{/* Labels every object carries. */}}
{{- define "sandbox.labels" -}}
app.kubernetes.io/part-of: sandbox-apiserver
{{- end }}

{{/* The server's pod labels: its selector, and what --server-pod-labels names. */}}
{{- define "sandbox.selector" -}}
app.kubernetes.io/name: sandbox-apiserver
{{- end }}

{{- define "sandbox.etcdSelector" -}}
app.kubernetes.io/name: sandbox-etcd
{{- end }}

{{/* The Service's name in the cluster, the name in the serving certificate. */}}
{{- define "sandbox.serviceHost" -}}
sandbox-apiserver.{{ .Release.Namespace }}.svc
{{- end }}

{{- define "sandbox.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/* The Secret the server's serving certificate is in. */}}
{{- define "sandbox.servingSecret" -}}
{{- if eq .Values.certificates.mode "supplied" -}}
{{ .Values.certificates.supplied.secretName }}
{{- else -}}
sandbox-apiserver-serving-cert
{{- end }}
{{- end }}

{{/* The Secret with the server's etcd client certificate (ca.crt, tls.crt, tls.key). */}}
{{- define "sandbox.etcdClientSecret" -}}
{{- if eq .Values.etcd.mode "external" -}}
{{ required "etcd.external.secretName is required with etcd.mode=external" .Values.etcd.external.secretName }}
{{- else -}}
sandbox-apiserver-etcd-client
{{- end }}
{{- end }}

{{/* The bundled etcd's member names, peer host suffix and client URL. */}}
{{- define "sandbox.etcdPeerHost" -}}
sandbox-etcd-peer.{{ .Release.Namespace }}.svc
{{- end }}

{{- define "sandbox.etcdServers" -}}
{{- if eq .Values.etcd.mode "external" -}}
{{- if not .Values.etcd.external.endpoints }}{{ fail "etcd.external.endpoints is required with etcd.mode=external" }}{{ end -}}
{{ join "," .Values.etcd.external.endpoints }}
{{- else -}}
https://sandbox-etcd.{{ .Release.Namespace }}.svc:2379
{{- end }}
{{- end }}

{{/* podAntiAffinity of MODE (soft, hard, none) for pods matching SELECTOR. */}}
{{- define "sandbox.antiAffinity" -}}
{{- if eq .mode "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
  - topologyKey: kubernetes.io/hostname
    labelSelector:
      matchLabels:
        {{- .selector | nindent 8 }}
{{- else if eq .mode "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- .selector | nindent 10 }}
{{- end }}
{{- end }}

{{/* sandbox.reuse: the data of the Secret NAME of the release's namespace when it has ca.crt, tls.crt and tls.key (an upgrade keeps the certificates), as JSON; "{}" otherwise (helm template without a cluster). Args: list $ NAME. */}}
{{- define "sandbox.reuse" -}}
{{- $root := index . 0 -}}
{{- $s := lookup "v1" "Secret" $root.Release.Namespace (index . 1) -}}
{{- $data := dict -}}
{{- if $s }}{{ $data = $s.data | default dict }}{{ end -}}
{{- if and (index $data "ca.crt") (index $data "tls.crt") (index $data "tls.key") -}}
{{ $data | toJson }}
{{- else -}}
{}
{{- end -}}
{{- end }}
