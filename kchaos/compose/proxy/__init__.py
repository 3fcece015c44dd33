"""The request proxy: a Kafka-protocol-aware TCP proxy that can hold, drop or delay chosen requests of a link
while every other request of every connection flows. It runs inside a node's network sidecar, which has
python3 but not kchaos, so its modules import only the standard library and each other (relatively: the
directory can be copied anywhere under any package name and run as `python3 -m <dir>.request_proxy`, or as
`python3 <dir>/request_proxy.py`). Start with request_proxy.py's docstring.
"""
