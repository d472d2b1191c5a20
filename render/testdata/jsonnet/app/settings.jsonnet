{
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings' },
  data: { LOG_LEVEL: std.extVar('level') },
}
