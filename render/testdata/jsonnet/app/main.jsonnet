local p = import 'params.libsonnet';
local k = import 'kube.libsonnet';

function(replicas=1) [
  k.deployment(p.name, p.image, replicas) + { metadata+: { labels: { env: std.extVar('env') } } },
  k.service(p.name),
]
