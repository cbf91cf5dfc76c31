import { EVENT_TYPES } from '../../src/sdk/types.js';

/** A labelled "Event type" picker: any, or one of the reserved types. Used by every filter form. */
export function EventTypeSelect({ id, value, onChange }: { id: string; value: string; onChange: (value: string) => void }) {
  return (
    <div class="field">
      <label for={id}>Event type</label>
      <select id={id} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        <option value="">any</option>
        {EVENT_TYPES.map((type) => (
          <option key={type} value={type}>
            {type}
          </option>
        ))}
      </select>
    </div>
  );
}
