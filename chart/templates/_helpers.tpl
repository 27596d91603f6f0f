{{/*
Names, labels and the few derived settings every template shares.
*/}}

{{- define "eso.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name. A release named like the chart does not repeat the name.
*/}}
{{- define "eso.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "eso.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eso.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eso.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "eso.labels" -}}
helm.sh/chart: {{ include "eso.chart" . }}
{{ include "eso.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: endpointslice-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "eso.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "eso.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "eso.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
Leader election is forced on when more than one replica runs: two active operators would fight
over the same EndpointSlices.
*/}}
{{- define "eso.leaderElection" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicaCount) 1) }}true{{- else }}false{{- end }}
{{- end }}

{{- define "eso.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.leaseNamespace }}
{{- end }}

{{/*
Namespaced mode: a non-empty `namespaces` list. RBAC is then granted with one Role per watched
namespace instead of a ClusterRole.
*/}}
{{- define "eso.namespaced" -}}
{{- if .Values.namespaces }}true{{- else }}false{{- end }}
{{- end }}

{{/*
The namespaced rules: read what the reconciler reads, write only EndpointSlices and Events.
Shared by the ClusterRole (cluster mode) and the per-namespace Roles (namespaced mode).
*/}}
{{- define "eso.rules" -}}
- apiGroups: [""]
  resources: ["services", "pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- /* Endpoints: read always (ours, and someone else's in the way); written only when enabled. */}}
{{- if or .Values.writeEndpoints .Values.endpoints.write }}
- apiGroups: [""]
  resources: ["endpoints"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
{{- else }}
- apiGroups: [""]
  resources: ["endpoints"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.endpointSelectors.enabled }}
- apiGroups: ["endpointslice-operator.io"]
  resources: ["endpointselectors"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["endpointslice-operator.io"]
  resources: ["endpointselectors/status"]
  verbs: ["patch"]
{{- end }}
{{- if .Values.rbac.resourceClaims }}
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaims"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- include "eso.mcsRules" . }}
{{- end }}

{{- define "eso.nodeRules" -}}
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch"]
{{- if .Values.multicluster.enabled }}
{{- /* Multi-cluster: this cluster's id, and which namespaces exist (imports go only there). */}}
- apiGroups: ["about.k8s.io"]
  resources: ["clusterproperties"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- end }}
{{/*
Multi-cluster (namespaced rules): read the ServiceExports and write their status; write the
ServiceImports and their derived Services (selectorless, owned by the ServiceImport).
*/}}
{{- define "eso.mcsRules" -}}
{{- if .Values.multicluster.enabled }}
- apiGroups: ["multicluster.x-k8s.io"]
  resources: ["serviceexports"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["multicluster.x-k8s.io"]
  resources: ["serviceexports/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["multicluster.x-k8s.io"]
  resources: ["serviceimports"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["multicluster.x-k8s.io"]
  resources: ["serviceimports/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["create", "update", "patch", "delete"]
{{- end }}
{{- end }}
{{/*
What a peer cluster's operator reads here, through the kubeconfig it holds for this cluster.
*/}}
{{- define "eso.mcsPeerRules" -}}
- apiGroups: ["multicluster.x-k8s.io"]
  resources: ["serviceexports"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["about.k8s.io"]
  resources: ["clusterproperties"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{/*
The peers' kubeconfig paths, comma-separated (ENDPOINTSLICE_OPERATOR_MCS_PEERS): each peer's
Secret is mounted at <peersMountPath>/<secretName>/, its key as the file name.
*/}}
{{- define "eso.mcsPeerPaths" -}}
{{- if .Values.multicluster.enabled }}
{{- $paths := list }}
{{- range .Values.multicluster.peers }}
{{- $paths = append $paths (printf "%s/%s/%s" $.Values.multicluster.peersMountPath .secretName (default "kubeconfig" .key)) }}
{{- end }}
{{- join "," $paths }}
{{- end }}
{{- end }}
{{/*
"true" when this release may own the CRD named .name (files/crds/<name>.yaml): it is absent from
the cluster, or already this release's (Helm's meta.helm.sh/release-name and -namespace). A CRD
installed otherwise (`kubectl apply -f deploy/crds/`, or kept when a release of another name was
uninstalled) is left as it is, instead of failing the install on Helm's ownership check;
NOTES.txt names it. Offline rendering (helm template, --dry-run) finds nothing: it renders all.
*/}}
{{- define "eso.crdOwnable" -}}
{{- $live := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" .name -}}
{{- $annotations := dig "metadata" "annotations" dict ($live | default dict) -}}
{{- if or (not $live) (and (eq (get $annotations "meta.helm.sh/release-name") .root.Release.Name) (eq (get $annotations "meta.helm.sh/release-namespace") .root.Release.Namespace)) -}}
true
{{- end -}}
{{- end }}
{{/*
The names of the CRDs this release would install: the EndpointSelector one, and the
Multi-Cluster Services ones.
*/}}
{{- define "eso.crdNames" -}}
{{- $names := list -}}
{{- if and .Values.endpointSelectors.enabled .Values.endpointSelectors.installCRD -}}
{{- $names = append $names "endpointselectors.endpointslice-operator.io" -}}
{{- end -}}
{{- if and .Values.multicluster.enabled .Values.multicluster.installCRDs -}}
{{- $names = concat $names (list "serviceexports.multicluster.x-k8s.io" "serviceimports.multicluster.x-k8s.io" "clusterproperties.about.k8s.io") -}}
{{- end -}}
{{- join " " $names -}}
{{- end }}
