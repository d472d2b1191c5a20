local p = import 'sub.libsonnet';
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: p.name } }
