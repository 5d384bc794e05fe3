from testparts.components import NumberSpout, TerminalEmitterBolt

from storm_zmq import Topology


class Undeclared(Topology):
    numbers = NumberSpout.spec(par=2)
    terminal = TerminalEmitterBolt.spec(inputs=[numbers], par=2)
