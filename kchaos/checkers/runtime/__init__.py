"""The Spark and JVM runtime a check runs on: the local session and its settings, the long-lived Spark
Connect server, the JVM's class archive, the JAVA_HOME it starts from and where its output goes.

Separate from the checks because none of it is about Kafka: it is how a JVM is started and kept quiet on
a small machine, and a change to it changes how fast a check runs, never what it finds.
"""
