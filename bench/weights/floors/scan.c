/* scan.c FILE MODE CHUNK_KIB: the check that no f32 of FILE is infinite or NaN, CHUNK_KIB at a time;
 * CPU s. MODE 1: the mapping, MADV_POPULATE_READ then MADV_DONTNEED per chunk (before); 2: the
 * mapping's own faults, MADV_DONTNEED; 3: pread into a buffer (after: ir_const_scan). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
static double sys_(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_stime.tv_sec+r.ru_stime.tv_usec/1e6;}
static uint32_t scan(const unsigned char *p, size_t n){ /* n floats, blocked */
  uint32_t acc=0; size_t k=0;
  for(;k+64<=n;k+=64){const unsigned char*q=p+4*k;for(int j=0;j<64;j++){uint32_t u;memcpy(&u,q+4*j,4);acc|=(u&0x7f800000u)+0x00800000u;}}
  for(;k<n;k++){uint32_t u;memcpy(&u,p+4*k,4);acc|=(u&0x7f800000u)+0x00800000u;}
  return acc;}
int main(int argc,char**argv){
  const char*path=argv[1]; int mode=atoi(argv[2]); size_t chunk=(size_t)atol(argv[3])<<10;
  int fd=open(path,O_RDONLY); struct stat st; fstat(fd,&st); size_t len=st.st_size & ~(size_t)4095;
  double c0=cpu(), s0=sys_(); uint32_t acc=0;
  if(mode<=2){unsigned char*m=mmap(NULL,st.st_size,PROT_READ,MAP_PRIVATE,fd,0);
    for(size_t at=0;at<len;at+=chunk){size_t l=len-at<chunk?len-at:chunk;
      if(mode==1) madvise(m+at,l,MADV_POPULATE_READ);
      acc|=scan(m+at,l/4); madvise(m+at,l,MADV_DONTNEED);} }
  else {unsigned char*b=aligned_alloc(4096,chunk);
    for(size_t at=0;at<len;at+=chunk){size_t l=len-at<chunk?len-at:chunk; if(pread(fd,b,l,at)!=(ssize_t)l)return 1; acc|=scan(b,l/4);} }
  printf("mode %d chunk %zuK: cpu %.3f sys %.3f acc %x\n",mode,chunk>>10,cpu()-c0,sys_()-s0,acc);
}
