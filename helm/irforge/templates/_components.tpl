{{/* What differs between the irforge Deployments: the role's arguments, its claims, its secret
     environment, its gRPC service name. deployments.yaml, services.yaml, pdb.yaml and
     networkpolicy.yaml range over the same list, so every component gets every object. */}}

{{- define "irforge.componentNames" -}}
corpus evaluator judge orchestrator models
{{- end }}

{{/* Pod-level settings (replicas, resources, scheduling): models has one set per mode. */}}
{{- define "irforge.podValues" -}}
{{- $spec := index .root.Values .component }}
{{- if eq .component "models" }}
{{- if eq .root.Values.models.mode "rayservice" }}
{{- toYaml .root.Values.models.front }}
{{- else }}
{{- toYaml .root.Values.models.deployment }}
{{- end }}
{{- else }}
{{- toYaml $spec }}
{{- end }}
{{- end }}

{{- define "irforge.grpcService" -}}
{{- $names := dict "corpus" "irforge.v1.Corpus" "evaluator" "irforge.v1.Evaluator" "judge" "irforge.v1.Judge" "orchestrator" "irforge.v1.Orchestrator" "models" "irforge.v1.Encoder" }}
{{- index $names .component }}
{{- end }}

{{/* Components holding a ReadWriteOnce claim are replaced, not rolled: two pods cannot mount it. */}}
{{- define "irforge.strategy" -}}
{{- if has .component (list "corpus" "judge" "orchestrator") }}
type: Recreate
{{- else }}
type: RollingUpdate
rollingUpdate:
  maxUnavailable: 0
  maxSurge: 1
{{- end }}
{{- end }}

{{/* Container command and arguments. */}}
{{- define "irforge.containerCommand" -}}
{{- $v := .root.Values }}
{{- $spec := index $v .component }}
{{- if and (eq .component "models") (eq $v.models.mode "rayservice") }}
command: ["python", "-m", "irforge.cli.encoder_front"]
args:
  - front
  - --ray-address
  - {{ printf "ray://%s-head-svc:10001" (include "irforge.rayServiceName" .root) | quote }}
  - --app
  - {{ $v.models.rayService.appName | quote }}
  - --host
  - 0.0.0.0
  - --port
  - {{ $spec.port | quote }}
  - --workers
  - {{ $spec.workers | quote }}
{{- else }}
args:
  - service
  - {{ .component }}
  - --host
  - 0.0.0.0
  - --port
  - {{ $spec.port | quote }}
  - --workers
  - {{ $spec.workers | quote }}
{{- if $v.metrics.enabled }}
  - --metrics-port
  - {{ $v.metrics.port | quote }}
{{- end }}
{{- if eq .component "corpus" }}
  - --backend
  - {{ ternary "elasticsearch" "embedded" (ne $v.elasticsearch.url "") }}
  - --vector-backend
  - {{ ternary "qdrant" "embedded" (ne $v.qdrant.url "") }}
{{- end }}
{{- if eq .component "models" }}
{{- include "irforge.encoderArgs" .root | trim | nindent 2 }}
{{- end }}
{{- if and (eq .component "judge") $v.judge.spec }}
  - --judge
  - /etc/irforge/judge/judge.yaml
{{- end }}
{{- if and (eq .component "orchestrator") $v.web.enabled }}
  - --web-port
  - {{ $v.web.port | quote }}
{{- end }}
{{- if eq .component "orchestrator" }}
  - --auth
  - {{ $v.orchestrator.auth.mode | quote }}
{{- if $v.orchestrator.auth.operatorToken.existingSecret }}
  - --operator-token-file
  - /etc/irforge/operator-token/{{ $v.orchestrator.auth.operatorToken.key }}
{{- end }}
{{- end }}
{{- range $spec.extraArgs }}
  - {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Environment beyond the shared ConfigMap: secret references only (never literal keys). */}}
{{- define "irforge.containerEnv" -}}
{{- $v := .root.Values }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- if eq .component "corpus" }}
{{- with $v.elasticsearch.apiKey.existingSecret }}
- name: IRFORGE_ELASTICSEARCH_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $v.elasticsearch.apiKey.key }}
{{- end }}
{{- with $v.qdrant.apiKey.existingSecret }}
- name: IRFORGE_QDRANT_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $v.qdrant.apiKey.key }}
{{- end }}
{{- end }}
{{- if and (eq .component "judge") $v.judge.apiKey.existingSecret }}
- name: {{ $v.judge.apiKey.env }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.judge.apiKey.existingSecret }}
      key: {{ $v.judge.apiKey.key }}
{{- end }}
{{- if eq .component "orchestrator" }}
{{- range $v.orchestrator.endpointSecrets }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .key }}
{{- end }}
{{- end }}
{{- if and (eq .component "models") $v.models.modelVolume.hubCache }}
- name: HF_HOME
  value: {{ $v.models.modelVolume.hubCache | quote }}
{{- end }}
{{- end }}

{{/* Claims per component: (volume name, values key, mount path). */}}
{{- define "irforge.claimMounts" -}}
{{- $table := dict "corpus" (list (list "data" "/var/lib/irforge/data")) "judge" (list (list "judge" "/var/lib/irforge/judge")) "orchestrator" (list (list "state" "/var/lib/irforge/state") (list "cache" "/var/cache/irforge")) }}
{{- toYaml (get $table .component | default list) }}
{{- end }}

{{- define "irforge.containerVolumeMounts" -}}
{{- include "irforge.scratchMounts" .root }}
{{- range (include "irforge.claimMounts" . | fromYamlArray) }}
- name: {{ index . 0 }}
  mountPath: {{ index . 1 }}
{{- end }}
{{- if and (eq .component "models") (eq .root.Values.models.mode "deployment") }}
{{- include "irforge.modelMount" .root }}
{{- end }}
{{- if and (eq .component "judge") .root.Values.judge.spec }}
- name: judge-spec
  mountPath: /etc/irforge/judge
  readOnly: true
{{- end }}
{{- if and (eq .component "orchestrator") .root.Values.sharding.kubernetes.enabled }}
- name: shard-runner
  mountPath: /etc/irforge/sharding
  readOnly: true
{{- end }}
{{- if and (eq .component "orchestrator") .root.Values.persistence.datasets.existingClaim }}
- name: datasets
  mountPath: {{ .root.Values.persistence.datasets.mountPath }}
  readOnly: true
{{- end }}
{{- if and (eq .component "orchestrator") .root.Values.orchestrator.auth.operatorToken.existingSecret }}
- name: operator-token
  mountPath: /etc/irforge/operator-token
  readOnly: true
{{- end }}
{{- end }}

{{- define "irforge.podVolumes" -}}
{{- $root := .root }}
{{- include "irforge.scratchVolumes" $root }}
{{- range (include "irforge.claimMounts" . | fromYamlArray) }}
{{- $name := index . 0 }}
- name: {{ $name }}
  persistentVolumeClaim:
    claimName: {{ include "irforge.claimName" (dict "root" $root "name" $name "spec" (index $root.Values.persistence $name)) }}
{{- end }}
{{- if and (eq .component "models") (eq $root.Values.models.mode "deployment") }}
{{- include "irforge.modelVolume" $root }}
{{- end }}
{{- if and (eq .component "judge") $root.Values.judge.spec }}
- name: judge-spec
  configMap:
    name: {{ include "irforge.fullname" $root }}-judge-spec
{{- end }}
{{- if and (eq .component "orchestrator") $root.Values.sharding.kubernetes.enabled }}
- name: shard-runner
  configMap:
    name: {{ include "irforge.fullname" $root }}-shard-runner
{{- end }}
{{- if and (eq .component "orchestrator") $root.Values.persistence.datasets.existingClaim }}
- name: datasets
  persistentVolumeClaim:
    claimName: {{ $root.Values.persistence.datasets.existingClaim }}
    readOnly: true
{{- end }}
{{- with $root.Values.orchestrator.auth.operatorToken.existingSecret }}
- name: operator-token
  secret:
    secretName: {{ . }}
    defaultMode: 0440   # root and the pod's fsGroup: the non-root service reads it
{{- end }}
{{- end }}

{{/* A component's egress rules (besides DNS): its callees and its configured external targets. */}}
{{- define "irforge.componentEgress" -}}
{{- $root := .root }}
{{- $v := .root.Values }}
{{- $np := $v.networkPolicy }}
{{- $component := .component }}
{{- $front := and (eq $component "models") (eq $v.models.mode "rayservice") }}
{{- if eq $component "orchestrator" }}
{{- range $callee := list "corpus" "evaluator" "models" "judge" }}
- to:
    - podSelector:
        matchLabels:
          {{- include "irforge.selectorLabels" (dict "root" $root "component" $callee) | nindent 10 }}
  ports:
    - {port: {{ (index $v $callee).port }}, protocol: TCP}
{{- end }}
{{- include "irforge.egressRules" $np.teamEndpoints  }}
{{- if $v.sharding.kubernetes.enabled }}
{{- include "irforge.egressRules" $np.kubeApiServer  }}
{{- end }}
{{- else if eq $component "corpus" }}
{{- include "irforge.egressRules" $np.searchBackends  }}
{{- else if eq $component "judge" }}
{{- include "irforge.egressRules" $np.llmEndpoints  }}
{{- else if $front }}
- to:
    - podSelector:
        matchLabels:
          {{- include "irforge.selectorLabels" (dict "root" $root "component" "ray") | nindent 10 }}
  ports:
    - {port: 10001, protocol: TCP}
{{- end }}
{{- end }}
