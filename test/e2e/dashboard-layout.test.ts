/**
 * The dashboard's layout in a real browser (Debian's Chromium via playwright-core), measured rather
 * than eyeballed: nothing overflows beside the open detail panel at 1280 px or inside any card at
 * 390 px, each count badge wears its state's colour, and every edge label of the drawn machines
 * sits on its own edge. The data is made to stress the layout: a 100-character event id and a
 * receiver answering with a long unbroken line.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { DIAGRAM_MACHINES, machineGraph, renderSvg } from '../../src/diagram/index.js';
import { DELIVERY_STATUSES } from '../../src/sdk/types.js';
import { startTestHookline } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { NARROW, WIDE, openPage, screenshot, signIn, useChromium, waitForRows, waitForStateCount } from './browser.js';

const browser = useChromium();

/** The longest event id the API takes (`evt_` and 100 characters): it must wrap, not push the layout wide. */
const LONG_EVENT_ID = `evt_${'long_event_id_'.repeat(7)}ab`;

/** A node with three succeeded deliveries (one of LONG_EVENT_ID) and two dead letters (one of the longest event type) whose receiver answered one long unbroken line. */
async function nodeWithDeliveries(): Promise<{ hookline: TestHookline; deliveryIds: string[] }> {
  const hookline = await startTestHookline();
  const receiver = await startReceiver({
    respond: (delivery) => (delivery.envelope.data.fail ? { status: 500, body: `{"error":"${'x'.repeat(300)}"}` } : { status: 204 }),
  });
  await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event', 'service.connected_account.expired', 'service.trigger.disabled'] });
  const events = [
    { id: LONG_EVENT_ID, type: 'service.trigger.event', data: { fail: false } },
    { id: 'evt_layout_2', type: 'service.trigger.disabled', data: { fail: false } },
    { id: 'evt_layout_3', type: 'service.trigger.event', data: { fail: true } },
    { id: 'evt_layout_4', type: 'service.connected_account.expired', data: { fail: true } },
    { id: 'evt_layout_5', type: 'service.trigger.event', data: { fail: false } },
  ] as const;
  const deliveryIds: string[] = [];
  for (const event of events) deliveryIds.push((await hookline.client.sendEvent(event)).deliveryId!);
  for (const id of deliveryIds) {
    await waitFor(async () => ['succeeded', 'dead_lettered'].includes((await hookline.client.getDelivery(id)).status), { timeoutMs: 15_000, message: `${id} to settle` });
  }
  return { hookline, deliveryIds };
}

/** How far the document, and each horizontally scrollable box, is wider than its frame (0: it fits). */
async function sidewaysOverflow(page: Page, selector: string): Promise<{ what: string; by: number }[]> {
  return page.evaluate((cards) => {
    const found: { what: string; by: number }[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) found.push({ what: 'the page', by: root.scrollWidth - root.clientWidth });
    for (const card of Array.from(document.querySelectorAll<HTMLElement>(cards))) {
      if (card.scrollWidth > card.clientWidth) found.push({ what: `${card.tagName.toLowerCase()}.${card.className}`, by: card.scrollWidth - card.clientWidth });
    }
    return found;
  }, selector);
}

/**
 * Every visible element inside a card whose box sticks out of the card's left or right side. Boxes
 * clipped on purpose (screen-reader-only text, the table head hidden on phones) are not seen, so
 * they are skipped.
 */
async function elementsOutsideCards(page: Page, cards: string): Promise<string[]> {
  return page.evaluate((selector) => {
    const clipped = (element: Element, card: Element): boolean => {
      for (let at: Element | null = element; at && at !== card; at = at.parentElement) {
        if (getComputedStyle(at).clip !== 'auto') return true;
      }
      return false;
    };
    const describe = (element: Element) => `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''}${typeof element.className === 'string' && element.className ? `.${element.className.split(' ').join('.')}` : ''} "${(element.textContent ?? '').trim().slice(0, 40)}"`;
    const found: string[] = [];
    for (const card of Array.from(document.querySelectorAll(selector))) {
      const frame = card.getBoundingClientRect();
      for (const element of Array.from(card.querySelectorAll('*'))) {
        const box = element.getBoundingClientRect();
        if (box.width === 0 || clipped(element, card)) continue;
        if (box.left < frame.left - 0.5 || box.right > frame.right + 0.5) {
          found.push(`${describe(element)} spans ${Math.round(box.left)}–${Math.round(box.right)} in ${describe(card).split(' ')[0]} at ${Math.round(frame.left)}–${Math.round(frame.right)}`);
        }
      }
    }
    return found;
  }, cards);
}

/** The cards of the dashboard's pages: panels, the filter form, table frames and (on phones) each row. */
const CARDS = 'main .panel, main .filters, main .table-scroll, main tr[data-delivery-id], main .alert, main .diagram';

interface LabelPlacement {
  edge: string;
  /** From the label's box to the nearest point of its edge's path, in the drawing's units. */
  ownDistance: number;
  /** The same to the nearest other edge. */
  otherDistance: number;
}

/** For each edge label of the SVG drawn in `page`: how far its box is from its own edge's path, and from the nearest other edge. */
async function labelPlacements(page: Page): Promise<LabelPlacement[]> {
  return page.evaluate(() => {
    const key = (element: Element) => `${element.getAttribute('data-from')} → ${element.getAttribute('data-to')}: ${element.getAttribute('data-event')}`;
    const samples = new Map<Element, { x: number; y: number }[]>();
    const edges = Array.from(document.querySelectorAll('svg g.edge'));
    for (const edge of edges) {
      const path = edge.querySelector('path')!;
      const length = path.getTotalLength();
      const points = [];
      for (let at = 0; at <= length; at += 1) points.push(path.getPointAtLength(at));
      samples.set(edge, points);
    }
    const distance = (rect: { x: number; y: number; width: number; height: number }, points: { x: number; y: number }[]) =>
      Math.min(
        ...points.map((p) => Math.hypot(Math.max(rect.x - p.x, 0, p.x - rect.x - rect.width), Math.max(rect.y - p.y, 0, p.y - rect.y - rect.height))),
      );
    const labels = Array.from(document.querySelectorAll('svg g.label'));
    return labels.map((label, index) => {
      const box = label.querySelector('rect')!;
      const rect = { x: Number(box.getAttribute('x')), y: Number(box.getAttribute('y')), width: Number(box.getAttribute('width')), height: Number(box.getAttribute('height')) };
      // Labels are written in the edges' order; the attributes say which edge a label names.
      const own = edges[index]!;
      if (key(own) !== key(label)) throw new Error(`label ${index} (${key(label)}) is not for edge ${index} (${key(own)})`);
      return {
        edge: key(label),
        ownDistance: Math.round(distance(rect, samples.get(own)!) * 10) / 10,
        otherDistance: Math.round(Math.min(...edges.filter((edge) => edge !== own).map((edge) => distance(rect, samples.get(edge)!))) * 10) / 10,
      };
    });
  });
}

/** Pairs of drawn boxes that overlap: two labels, or a label and a state. */
async function overlappingLabels(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const boxOf = (group: Element) => {
      const rect = group.querySelector('rect')!;
      const [x, y, width, height] = ['x', 'y', 'width', 'height'].map((name) => Number(rect.getAttribute(name))) as [number, number, number, number];
      return { x, y, width, height, name: group.getAttribute('data-state') ?? `${group.getAttribute('data-from')} → ${group.getAttribute('data-to')}: ${group.getAttribute('data-event')}` };
    };
    const labels = Array.from(document.querySelectorAll('svg g.label')).map(boxOf);
    const states = Array.from(document.querySelectorAll('svg g.state')).map(boxOf);
    const found: string[] = [];
    labels.forEach((label, index) => {
      for (const other of [...labels.slice(index + 1), ...states]) {
        if (label.x < other.x + other.width && other.x < label.x + label.width && label.y < other.y + other.height && other.y < label.y + label.height) found.push(`${label.name} / ${other.name}`);
      }
    });
    return found;
  });
}

/** How close a label's box must come to its edge: a gap this small reads as "this label belongs to that line". */
const LABEL_REACH = 6;

describe('dashboard layout (headless Chromium)', () => {
  it('fits the delivery log beside the open detail panel at 1280 px, with no sideways scrolling', { timeout: 90_000 }, async () => {
    const { hookline, deliveryIds } = await nodeWithDeliveries();
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, 'test-key');
    for (const open of [deliveryIds[0]!, deliveryIds[2]!]) {
      await page.goto(`${hookline.url}/ui/#/deliveries/${open}`);
      await waitForRows(page, 5);
      await page.getByRole('region', { name: `Delivery ${open}` }).locator('ol.attempts > li').first().waitFor();
      expect(page.viewportSize()).toEqual(WIDE);
      expect(await sidewaysOverflow(page, 'main .table-scroll, main .split > *')).toEqual([]);
      expect(await elementsOutsideCards(page, 'main .table-scroll, main .detail')).toEqual([]);
    }
    await page.goto(`${hookline.url}/ui/#/dead-letters/${deliveryIds[2]}`);
    await waitForRows(page, 2);
    await page.getByRole('region', { name: `Delivery ${deliveryIds[2]}` }).locator('ol.attempts > li').first().waitFor();
    expect(await sidewaysOverflow(page, 'main .table-scroll, main .split > *')).toEqual([]);
    await screenshot(page, 'wide-log-with-detail', { readme: false, fullPage: true });
    expect(problems).toEqual([]);
  });

  it("gives each state's count badge the colour the diagram and the status words use for that state", { timeout: 60_000 }, async () => {
    const { hookline } = await nodeWithDeliveries();
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, 'test-key');
    await waitForStateCount(page, 'succeeded', 3);
    await waitForStateCount(page, 'dead_lettered', 2);
    const colours = await page.evaluate((statuses) =>
      statuses.map((status) => {
        const state = document.querySelector(`.diagram g.state[data-state="${status}"]`)!;
        return {
          status,
          badge: getComputedStyle(state.querySelector('g.count rect')!).fill,
          box: getComputedStyle(state.querySelector('rect')!).stroke,
          words: getComputedStyle(document.querySelector(`tr[data-status="${status}"] .badge`)!).color,
        };
      }),
    [...DELIVERY_STATUSES]);
    for (const colour of colours) expect({ status: colour.status, badge: colour.badge, box: colour.box }).toEqual({ status: colour.status, badge: colour.words, box: colour.words });
    expect(new Set(colours.map((colour) => colour.badge)).size).toBe(DELIVERY_STATUSES.length);
    await screenshot(page, 'states-colours', { readme: false });
    expect(problems).toEqual([]);
  });

  it('puts every edge label of both machines next to its own edge, clear of the other labels and the states', { timeout: 60_000 }, async () => {
    const { page, problems } = await openPage(browser());
    for (const machine of DIAGRAM_MACHINES) {
      await page.setContent(renderSvg(machineGraph(machine)));
      const placements = await labelPlacements(page);
      expect(placements.length).toBe(machineGraph(machine).edges.length);
      const astray = placements.filter((label) => label.ownDistance > LABEL_REACH || label.ownDistance > label.otherDistance);
      expect(astray, `${machine}: labels away from their edges`).toEqual([]);
      expect(await overlappingLabels(page), `${machine}: labels on top of other labels or states`).toEqual([]);
      await screenshot(page, `diagram-${machine}`, { readme: machine === 'webhook' });
    }
    expect(problems).toEqual([]);
  });

  it('keeps every card within the screen at 390 px: no card scrolls sideways, nothing sticks out', { timeout: 90_000 }, async () => {
    const { hookline, deliveryIds } = await nodeWithDeliveries();
    const { page, problems } = await openPage(browser());
    await page.setViewportSize(NARROW);
    await signIn(page, hookline.url, 'test-key');
    const check = async (what: string) => {
      expect(await sidewaysOverflow(page, CARDS), `${what}: scrolls sideways`).toEqual([]);
      expect(await elementsOutsideCards(page, CARDS), `${what}: sticks out of its card`).toEqual([]);
    };

    await waitForStateCount(page, 'succeeded', 3);
    await check('States');
    await screenshot(page, 'narrow-states-fit', { readme: false, fullPage: true });
    await page.goto(`${hookline.url}/ui/#/deliveries`);
    await waitForRows(page, 5);
    await check('Delivery log');
    await page.goto(`${hookline.url}/ui/#/deliveries/${deliveryIds[2]}`);
    await page.locator('ol.attempts > li').nth(2).waitFor();
    await check('Delivery log with a delivery open');
    await page.goto(`${hookline.url}/ui/#/dead-letters`);
    await waitForRows(page, 2);
    await check('Dead letters');
    await page.goto(`${hookline.url}/ui/#/webhook`);
    await page.getByRole('heading', { name: 'Current configuration' }).waitFor();
    await check('Webhook');
    await page.goto(`${hookline.url}/ui/#/replay`);
    await page.getByRole('heading', { level: 1, name: 'Replay an event' }).waitFor();
    await page.getByRole('radio', { name: LONG_EVENT_ID }).check();
    await page.getByRole('button', { name: 'Replay event' }).click();
    await page.getByRole('status').filter({ hasText: 'as a new delivery' }).waitFor();
    await waitForRows(page, 2);
    await check('Replay');
    await screenshot(page, 'narrow-replay', { fullPage: true });
    expect(problems).toEqual([]);
  });
});
