{ name: 'api', image: 'registry.example.com/api:2.1' }
