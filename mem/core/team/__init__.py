"""Team memory: the synced ``team/`` subdirectory, its client, watcher and server (reference §8).

keys      the pure contract: key validation, checksums, batching, repo names
client    pull / push / sync / status against a server
watch     push after quiet periods, pull periodically, survive outages
server    the HTTP server (stdlib), storage in storage/store_sqlite/store_pg
routing   shared pieces for the commands that write or inject memories
"""
