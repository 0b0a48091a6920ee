{{/* A Ray pod template (head or worker group) under the same pod security as every irforge pod.
     KubeRay adds the `ray start` command, its own ports and probes to the first container. */}}
{{- define "irforge.rayPodTemplate" -}}
{{- $root := .root }}
{{- $ctx := dict "root" $root "component" "ray" }}
metadata:
  labels:
    {{- include "irforge.labels" $ctx | nindent 4 }}
spec:
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "irforge.podSecurityContext" $root | nindent 4 }}
  containers:
    - name: {{ .name }}
      image: {{ include "irforge.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      {{- with .ports }}
      ports:
        {{- range . }}
        - name: {{ index . 0 }}
          containerPort: {{ index . 1 }}
          protocol: TCP
        {{- end }}
      {{- end }}
      envFrom:
        - configMapRef:
            name: {{ include "irforge.fullname" $root }}-config
      {{- with $root.Values.models.modelVolume.hubCache }}
      env:
        - name: HF_HOME
          value: {{ . | quote }}
      {{- end }}
      resources:
        requests:
          {{- toYaml .group.resources.requests | nindent 10 }}
          {{- if gt (int .gpus) 0 }}
          nvidia.com/gpu: {{ .gpus }}
          {{- end }}
        limits:
          {{- toYaml .group.resources.limits | nindent 10 }}
          {{- if gt (int .gpus) 0 }}
          nvidia.com/gpu: {{ .gpus }}
          {{- end }}
      securityContext:
        {{- include "irforge.containerSecurityContext" $root | nindent 8 }}
      volumeMounts:
        {{- include "irforge.scratchMounts" $root | nindent 8 }}
        # Ray's object store lives in shared memory.
        - name: dshm
          mountPath: /dev/shm
        {{- if $root.Values.models.modelVolume.existingClaim }}
        {{- include "irforge.modelMount" $root | trim | nindent 8 }}
        {{- end }}
  volumes:
    {{- include "irforge.scratchVolumes" $root | nindent 4 }}
    - name: dshm
      emptyDir:
        medium: Memory
        sizeLimit: {{ .group.shmSize }}
    {{- if $root.Values.models.modelVolume.existingClaim }}
    {{- include "irforge.modelVolume" $root | trim | nindent 4 }}
    {{- end }}
  {{- with .group.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .group.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
