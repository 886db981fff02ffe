import { readFile } from "node:fs/promises";
import releaseSync from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";

/** WebAssembly pages are 64 KiB. */
const pageBytes = 64 * 1024;
/** The interpreter's build declares a memory of at least 16 MiB (256 pages). */
const minimumPages = 256;
/**
 * What the interpreter holds before a transform allocates anything: its
 * stack, static data, one runtime and context with the harness (measured:
 * about 5.2 MiB; a 16 MiB memory leaves 10.8 MiB to typed arrays).
 */
export const interpreterBaselineMb = 6;

/** One interpreter of its own over its own memory: what a sandbox runs in. */
export interface SandboxInstance {
  module: QuickJSWASMModule;
  memory: WebAssembly.Memory;
}

let compiled: Promise<WebAssembly.Module> | undefined;

/** The interpreter's WebAssembly code, compiled once per thread; every sandbox instantiates it anew. */
function compiledInterpreter(): Promise<WebAssembly.Module> {
  compiled ??= readFile(new URL("emscripten-module.wasm", import.meta.resolve("@jitl/quickjs-wasmfile-release-sync"))).then((bytes) =>
    WebAssembly.compile(bytes),
  );
  return compiled;
}

/** Most pages of one sandbox's memory: the transform's limit plus the interpreter's baseline. */
export function sandboxPages(memoryMb: number): number {
  return Math.max(minimumPages, Math.ceil(((memoryMb + interpreterBaselineMb) * 1024 * 1024) / pageBytes));
}

/**
 * A new interpreter instance over a WebAssembly memory whose maximum is
 * fixed: when the transform's data (strings and typed arrays included,
 * which the interpreter's own limit does not count) would pass it, the
 * memory cannot grow, allocation fails and the transform gets "out of
 * memory". One module shared by every sandbox would mean one memory of up
 * to 2 GB that never shrinks; this one goes with its sandbox.
 */
export async function newSandboxInstance(memoryMb: number): Promise<SandboxInstance> {
  const wasmModule = await compiledInterpreter();
  const memory = new WebAssembly.Memory({ initial: minimumPages, maximum: sandboxPages(memoryMb) });
  const variant = newVariant(releaseSync as unknown as QuickJSSyncVariant, { wasmModule, wasmMemory: memory });
  const module = await newQuickJSWASMModuleFromVariant(variant);
  return { module, memory };
}

/** Whether the instance's memory grew past its initial size (freeing it then gives memory back). */
export function grew(instance: SandboxInstance): boolean {
  return instance.memory.buffer.byteLength > minimumPages * pageBytes;
}
