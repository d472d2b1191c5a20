{ name: 'nested' }
