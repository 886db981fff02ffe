import { useState } from "preact/hooks";
import { useSession } from "./context.js";
import { describeError, fieldError, isUnauthenticated } from "./errors.js";
import type { FieldErrors } from "./field-error.js";

/**
 * A form that sends a resource to the server: `busy` while it does; an
 * invalid_argument naming one of its fields (`source.webhook.secret: …`)
 * shown beside that field (`errors`), anything else above the form
 * (`formError`); a refused token signs the tab out.
 */
export function useFormSubmit(
  /** The resource the server's field paths start with: "destination". */
  resource: string,
  /** Whether a field path the server names is one of the form's fields (default: anything but the resource itself). */
  ownField: (field: string) => boolean = (field) => field !== resource,
) {
  const { signOut } = useSession();
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  /** Sends, unless the page itself refuses the draft (`problems`, by field): those are shown and nothing is sent. */
  async function submit(problems: FieldErrors, send: () => Promise<void>): Promise<void> {
    setErrors(problems);
    setFormError(undefined);
    if (Object.keys(problems).length > 0) return;
    setBusy(true);
    try {
      await send();
    } catch (caught) {
      if (isUnauthenticated(caught)) signOut(describeError(caught));
      const named = fieldError(caught, resource);
      if (named && ownField(named.field)) setErrors({ [named.field]: named.message });
      else setFormError(describeError(caught));
    } finally {
      setBusy(false);
    }
  }

  return { errors, formError, busy, submit };
}
