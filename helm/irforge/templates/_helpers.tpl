{{/* Names ---------------------------------------------------------------------------------- */}}

{{- define "irforge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-scoped base name; component objects append "-<component>" (kept under 63 chars). */}}
{{- define "irforge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "irforge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "irforge.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Labels: Kubernetes' recommended set. Call with (dict "root" $ "component" "corpus"). */}}
{{- define "irforge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "irforge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{- define "irforge.labels" -}}
helm.sh/chart: {{ include "irforge.chart" .root }}
{{ include "irforge.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: irforge
{{- end }}

{{/* Addresses the services find each other by (Service DNS names inside the namespace). */}}
{{- define "irforge.address" -}}
{{- printf "%s-%s:%v" (include "irforge.fullname" .root) .component .port }}
{{- end }}

{{- define "irforge.rayServiceName" -}}
{{- printf "%s-ray" (include "irforge.fullname" .) }}
{{- end }}

{{/* Pod security ---------------------------------------------------------------------------- */}}

{{- define "irforge.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.fsGroup }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Every container: non-root, read-only root filesystem, no privilege escalation, no capabilities. */}}
{{- define "irforge.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The root filesystem is read-only: /tmp and $HOME (~/.cache, ~/.ray, ~/.config) are scratch. */}}
{{- define "irforge.scratchVolumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 2Gi
- name: home
  emptyDir:
    sizeLimit: 1Gi
{{- end }}

{{- define "irforge.scratchMounts" -}}
- name: tmp
  mountPath: /tmp
- name: home
  mountPath: /home/irforge
{{- end }}

{{/* The model claim (read-only), when set. */}}
{{- define "irforge.modelVolume" -}}
{{- if .Values.models.modelVolume.existingClaim }}
- name: models
  persistentVolumeClaim:
    claimName: {{ .Values.models.modelVolume.existingClaim }}
    readOnly: true
{{- end }}
{{- end }}

{{- define "irforge.modelMount" -}}
{{- if .Values.models.modelVolume.existingClaim }}
- name: models
  mountPath: {{ .Values.models.modelVolume.mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* gRPC health probes (grpc.health.v1, served by every irforge server): startup and liveness ask
     for the server as a whole (""), readiness for the component's own service. */}}
{{- define "irforge.grpcProbes" -}}
startupProbe:
  grpc:
    port: {{ .port }}
  periodSeconds: 5
  failureThreshold: {{ .startupFailures | default 60 }}
readinessProbe:
  grpc:
    port: {{ .port }}
    service: {{ .service }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
livenessProbe:
  grpc:
    port: {{ .port }}
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 3
{{- end }}

{{/* A claim name: the existing one, or the chart's. */}}
{{- define "irforge.claimName" -}}
{{- .spec.existingClaim | default (printf "%s-%s" (include "irforge.fullname" .root) .name) }}
{{- end }}

{{/* Ray encoder application args (irforge.models.serve_app:app), from the values. */}}
{{- define "irforge.serveArgs" -}}
{{- $e := .Values.models.encoder }}
{{- $s := .Values.models.rayService.serve }}
model: {{ $e.model | quote }}
{{- with $e.revision }}
revision: {{ . | quote }}
{{- end }}
query_prefix: {{ $e.queryPrefix | quote }}
passage_prefix: {{ $e.passagePrefix | quote }}
{{- if $e.maxSeqLength }}
max_seq_length: {{ $e.maxSeqLength }}
{{- end }}
batch_size: {{ $e.batchSize }}
precision: {{ $e.precision }}
{{- with $e.device }}
device: {{ . | quote }}
{{- end }}
num_cpus: {{ $s.numCpus }}
num_gpus: {{ $s.numGpus }}
min_replicas: {{ $s.minReplicas }}
max_replicas: {{ $s.maxReplicas }}
target_ongoing_requests: {{ $s.targetOngoingRequests }}
max_ongoing_requests: {{ $s.maxOngoingRequests }}
{{- if $s.torchThreads }}
torch_threads: {{ $s.torchThreads }}
{{- end }}
{{- end }}

{{/* Encoder flags for `irforge service models` (deployment mode). */}}
{{- define "irforge.encoderArgs" -}}
{{- $e := .Values.models.encoder }}
- --model
- {{ $e.model | quote }}
{{- with $e.revision }}
- --model-revision
- {{ . | quote }}
{{- end }}
{{- with $e.queryPrefix }}
- --query-prefix
- {{ . | quote }}
{{- end }}
{{- with $e.passagePrefix }}
- --passage-prefix
- {{ . | quote }}
{{- end }}
{{- if $e.maxSeqLength }}
- --max-seq-length
- {{ $e.maxSeqLength | quote }}
{{- end }}
- --encode-batch-size
- {{ $e.batchSize | quote }}
- --precision
- {{ $e.precision }}
{{- with $e.device }}
- --device
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* NetworkPolicy egress rules from targets {cidr, except, ports} or {namespaceSelector,
     podSelector, ports}. */}}
{{- define "irforge.egressRules" -}}
{{- range . }}
- to:
    {{- if .cidr }}
    - ipBlock:
        cidr: {{ .cidr }}
        {{- with .except }}
        except:
          {{- toYaml . | nindent 10 }}
        {{- end }}
    {{- else }}
    - {{- with .namespaceSelector }}
      namespaceSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .podSelector }}
      podSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
  {{- with .ports }}
  ports:
    {{- range . }}
    - {port: {{ . }}, protocol: TCP}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}
