from testparts.components import AuditingBolt, DocSpout, EnrichingBolt

from storm_zmq import Topology


class Mutating(Topology):
    docs = DocSpout.spec()
    enricher = EnrichingBolt.spec(inputs=[docs])
    auditor = AuditingBolt.spec(inputs=[docs])
