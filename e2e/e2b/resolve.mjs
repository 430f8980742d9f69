// Resolves the hosts of SBX_DOMAIN (serve's preview and runtime domain,
// {port}-{sandboxID}.<domain>) to 127.0.0.1, as the wildcard DNS record an
// operator points at serve would: loaded with node --import before the
// tests, so that the SDKs, unmodified, reach serve by the names they build.
import dns from 'node:dns'

const domain = process.env.SBX_DOMAIN
const lookup = dns.lookup
dns.lookup = function (host, options, callback) {
  if (typeof options === 'function') [callback, options] = [options, {}]
  if (domain && (host === domain || host.endsWith('.' + domain))) {
    if (options?.all) return process.nextTick(callback, null, [{ address: '127.0.0.1', family: 4 }])
    return process.nextTick(callback, null, '127.0.0.1', 4)
  }
  return lookup.call(this, host, options, callback)
}
