{
  deployment(name, image, replicas):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name },
    spec: {
      replicas: replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: name, image: image }] } },
    },
  },
  service(name):: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: name },
    spec: { selector: { app: name }, ports: [{ port: 80 }] },
  },
}
