export type { DiagramFormat, DiagramMachine, GraphEdge, MachineGraph } from './graph.js';
export { DIAGRAM_FORMATS, DIAGRAM_MACHINES, edgeDetail, edgeLabel, edgeTrigger, machineGraph } from './graph.js';
export { renderDot } from './dot.js';
export type { PathHighlight } from './mermaid.js';
export { renderMermaid } from './mermaid.js';
export { renderSvg } from './svg.js';
export { renderDiagram, updateReadmeDiagrams } from './readme.js';
